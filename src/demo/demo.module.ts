import { Module } from '@nestjs/common';
import { AnalyticsModule } from '../modules/analytics';
import { AuthModule } from '../modules/auth';
import { ComputersModule } from '../modules/computers';
import { EnterpriseControlsModule } from '../modules/enterprise-controls';
import { ReadinessModule } from '../modules/readiness';
import { SessionsModule } from '../modules/sessions';
import { AgentChannelModule } from '../modules/agent-channel';
import { DemoComputers } from './demo-computers';
import { DemoControls } from './demo-controls';
import { DemoConversations } from './demo-conversations';
import { DemoHistory } from './demo-history';
import { DemoReadiness } from './demo-readiness';
import { DemoSeeder } from './demo.seeder';
import { DemoAccounts } from './demo-accounts';
import { DemoWork } from './demo-work';

@Module({
  imports: [AuthModule, SessionsModule, AgentChannelModule, ComputersModule, EnterpriseControlsModule, ReadinessModule, AnalyticsModule],
  providers: [DemoSeeder, DemoAccounts, DemoWork, DemoConversations, DemoHistory, DemoComputers, DemoControls, DemoReadiness],
  exports: [DemoSeeder],
})
export class DemoModule {}

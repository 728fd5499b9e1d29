import { Module } from '@nestjs/common';
import { AuthModule } from '../modules/auth';
import { ComputersModule } from '../modules/computers';
import { EnterpriseControlsModule } from '../modules/enterprise-controls';
import { SessionsModule } from '../modules/sessions';
import { DemoComputers } from './demo-computers';
import { DemoControls } from './demo-controls';
import { DemoConversations } from './demo-conversations';
import { DemoSeeder } from './demo.seeder';

@Module({
  imports: [AuthModule, SessionsModule, ComputersModule, EnterpriseControlsModule],
  providers: [DemoSeeder, DemoConversations, DemoComputers, DemoControls],
  exports: [DemoSeeder],
})
export class DemoModule {}

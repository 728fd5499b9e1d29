import { DynamicModule, Module } from '@nestjs/common';
import { AppConfig } from './config/app-config';
import { DemoModule } from './demo/demo.module';
import { AuthModule } from './modules/auth';
import { ComputersModule } from './modules/computers';
import { EnterpriseControlsModule } from './modules/enterprise-controls';
import { EventsApiModule } from './modules/events';
import { ReadinessModule } from './modules/readiness';
import { AnalyticsModule } from './modules/analytics';
import { HealthModule } from './modules/health/health.module';
import { SessionsModule } from './modules/sessions';
import { AgentChannelModule } from './modules/agent-channel';
import { WebhooksModule } from './modules/webhooks';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './platform/database/database.module';
import { EventsModule } from './platform/events';
import { IdempotencyModule } from './platform/idempotency';
import { JobsModule } from './platform/jobs';
import { MetricsModule } from './platform/metrics';
import { RateLimitModule } from './platform/rate-limit';

/** The modular monolith: platform modules first, then one module per part of the spec. */
@Module({})
export class AppModule {
  static register(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.register(config),
        MetricsModule,
        DatabaseModule,
        EventsModule,
        JobsModule,
        IdempotencyModule,
        RateLimitModule,
        AuthModule,
        SessionsModule,
        AgentChannelModule,
        ComputersModule,
        EnterpriseControlsModule,
        ReadinessModule,
        AnalyticsModule,
        EventsApiModule,
        WebhooksModule,
        HealthModule,
        DemoModule,
      ],
    };
  }
}

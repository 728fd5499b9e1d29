import { Module, OnModuleInit } from '@nestjs/common';
import { AuthModule } from '../auth';
import { SessionActivity, SessionsModule } from '../sessions';
import { FactRecorder } from './activity.recorder';
import { AnalyticsRollupService } from './analytics-rollup.service';
import { AnalyticsController } from './analytics.controller';
import { AnalyticsRepository } from './analytics.repository';
import { AnalyticsService } from './analytics.service';
import { AnalyticsRollupJob } from './jobs/analytics-rollup.job';

@Module({
  imports: [AuthModule, SessionsModule],
  controllers: [AnalyticsController],
  providers: [AnalyticsRepository, AnalyticsService, AnalyticsRollupService, AnalyticsRollupJob, FactRecorder],
  exports: [AnalyticsRollupJob],
})
export class AnalyticsModule implements OnModuleInit {
  constructor(
    private readonly activity: SessionActivity,
    private readonly recorder: FactRecorder,
  ) {}

  /** Sessions records its activity through Analytics' recorder, in the activity's own transaction. */
  onModuleInit(): void {
    this.activity.bind(this.recorder);
  }
}

import { Module } from '@nestjs/common';
import { AuthModule } from '../auth';
import { SessionsModule } from '../sessions';
import { ActivityFactsListener } from './activity-facts.listener';
import { AnalyticsRollupService } from './analytics-rollup.service';
import { AnalyticsController } from './analytics.controller';
import { AnalyticsRepository } from './analytics.repository';
import { AnalyticsService } from './analytics.service';
import { AnalyticsRollupJob } from './jobs/analytics-rollup.job';

@Module({
  imports: [AuthModule, SessionsModule],
  controllers: [AnalyticsController],
  providers: [AnalyticsRepository, AnalyticsService, AnalyticsRollupService, AnalyticsRollupJob, ActivityFactsListener],
  exports: [AnalyticsRollupJob],
})
export class AnalyticsModule {}

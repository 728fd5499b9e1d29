import { Module } from '@nestjs/common';
import { AuthModule } from '../auth';
import { AnalyticsController } from './analytics.controller';
import { AnalyticsRepository } from './analytics.repository';
import { AnalyticsService } from './analytics.service';

@Module({ imports: [AuthModule], controllers: [AnalyticsController], providers: [AnalyticsRepository, AnalyticsService] })
export class AnalyticsModule {}

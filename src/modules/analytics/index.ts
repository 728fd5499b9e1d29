export { AnalyticsModule } from './analytics.module';
export { AnalyticsRollupJob } from './jobs/analytics-rollup.job';

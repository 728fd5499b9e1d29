export { AnalyticsFactEntity } from './analytics-fact.entity';
export { AnalyticsDayEntity } from './analytics-day.entity';
export { AnalyticsUserDayEntity } from './analytics-user-day.entity';
export { AnalyticsDirtyDayEntity, AnalyticsRollupStateEntity } from './rollup-bookkeeping.entity';

export { DURATION_BUCKETS, Metrics, PREFIX } from './metrics';
export { MetricsModule } from './metrics.module';
export { installHttpMetrics } from './http-metrics';

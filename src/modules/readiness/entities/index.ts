export { ReadinessReportEntity } from './readiness-report.entity';

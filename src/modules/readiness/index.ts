export { ReadinessModule } from './readiness.module';
export { ReadinessService } from './readiness.service';
export type { UploadReportInput } from './readiness.service';
export * from './events';
export { evaluateRepository } from './evaluator/evaluate';

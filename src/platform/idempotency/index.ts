export { IdempotencyModule } from './idempotency.module';
export { IdempotencyService, IDEMPOTENCY_RETENTION_MS } from './idempotency.service';
export type { IdempotentResult } from './idempotency.service';
export { IdempotencyKey, ApiIdempotencyKey, REPLAYED_HEADER, respond } from './idempotency-key.decorator';
export type { IdempotentRequest } from './idempotency-key.decorator';

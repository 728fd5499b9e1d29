export { RateLimitModule } from './rate-limit.module';
export { RateLimits } from './rate-limits';
export type { RateLimitSubject } from './rate-limits';
export { RateLimitWindowEntity } from './rate-limit-window.entity';

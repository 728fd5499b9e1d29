import { codesOf, CodeOf, errorClassOf, ErrorKind, ErrorTable } from '../http/domain-error';

const RATE_LIMIT_ERRORS = {
  RateLimited: { code: 'rate_limited', kind: ErrorKind.TooManyRequests },
} as const satisfies ErrorTable;

export const RateLimitErrorCode = codesOf(RATE_LIMIT_ERRORS);
export type RateLimitErrorCode = CodeOf<typeof RATE_LIMIT_ERRORS>;

export class RateLimitError extends errorClassOf(RATE_LIMIT_ERRORS) {}

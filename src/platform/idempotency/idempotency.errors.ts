import { codesOf, CodeOf, errorClassOf, ErrorKind, ErrorTable } from '../http/domain-error';

const IDEMPOTENCY_ERRORS = {
  KeyReused: { code: 'idempotency_key_reused', kind: ErrorKind.Unprocessable },
} as const satisfies ErrorTable;

export const IdempotencyErrorCode = codesOf(IDEMPOTENCY_ERRORS);
export type IdempotencyErrorCode = CodeOf<typeof IDEMPOTENCY_ERRORS>;

export class IdempotencyError extends errorClassOf(IDEMPOTENCY_ERRORS) {}

/** An `Idempotency-Key` sent again with another request. */
export function keyReused(): IdempotencyError {
  return new IdempotencyError(
    IdempotencyErrorCode.KeyReused,
    'Idempotency-Key: this key was already used with a different request; use a new key for a new request.',
  );
}

import { DomainError, ErrorKind } from '../http/domain-error';

export enum IdempotencyErrorCode {
  KeyReused = 'idempotency_key_reused',
}

export class IdempotencyError extends DomainError<IdempotencyErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case IdempotencyErrorCode.KeyReused:
        return ErrorKind.Unprocessable;
    }
  }
}

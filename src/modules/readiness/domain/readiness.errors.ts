import { DomainError, ErrorKind } from '../../../platform/http/domain-error';

export enum ReadinessErrorCode {
  UnknownCursor = 'unknown_start_after',
}

export class ReadinessError extends DomainError<ReadinessErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case ReadinessErrorCode.UnknownCursor:
        return ErrorKind.InvalidRequest;
    }
  }
}

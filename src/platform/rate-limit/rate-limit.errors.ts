import { DomainError, ErrorKind } from '../http/domain-error';

export enum RateLimitErrorCode {
  RateLimited = 'rate_limited',
}

export class RateLimitError extends DomainError<RateLimitErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case RateLimitErrorCode.RateLimited:
        return ErrorKind.TooManyRequests;
    }
  }
}

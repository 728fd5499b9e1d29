import { DomainError, ErrorKind } from '../../../platform/http/domain-error';

export enum ReadinessErrorCode {
  UnknownCursor = 'unknown_start_after',
  RepositoryNotFound = 'repository_not_found',
}

export class ReadinessError extends DomainError<ReadinessErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case ReadinessErrorCode.UnknownCursor:
        return ErrorKind.InvalidRequest;
      case ReadinessErrorCode.RepositoryNotFound:
        return ErrorKind.NotFound;
    }
  }
}

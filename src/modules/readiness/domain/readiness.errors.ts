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

export function repositoryNotFound(repoId: string): ReadinessError {
  return new ReadinessError(ReadinessErrorCode.RepositoryNotFound, `Your organization has no report of repository ${repoId}.`, { repoId });
}

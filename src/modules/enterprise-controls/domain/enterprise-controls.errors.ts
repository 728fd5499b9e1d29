import { DomainError, ErrorKind } from '../../../platform/http/domain-error';

export enum EnterpriseControlsErrorCode {
  RevisionNotFound = 'revision_not_found',
  RevisionMismatch = 'revision_mismatch',
  SecretUnreadable = 'secret_unreadable',
}

export class EnterpriseControlsError extends DomainError<EnterpriseControlsErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case EnterpriseControlsErrorCode.RevisionNotFound:
        return ErrorKind.NotFound;
      case EnterpriseControlsErrorCode.RevisionMismatch:
        return ErrorKind.PreconditionFailed;
      case EnterpriseControlsErrorCode.SecretUnreadable:
        return ErrorKind.Unavailable;
    }
  }
}

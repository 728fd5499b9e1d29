import { DomainError, ErrorKind } from '../../../platform/http/domain-error';

export enum EnterpriseControlsErrorCode {
  RevisionNotFound = 'revision_not_found',
  RevisionMismatch = 'revision_mismatch',
  SecretUnreadable = 'secret_unreadable',
  CustomModelNotFound = 'custom_model_not_found',
  ModelNotAllowed = 'model_not_allowed',
  ModelUnreachable = 'model_unreachable',
}

export class EnterpriseControlsError extends DomainError<EnterpriseControlsErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case EnterpriseControlsErrorCode.RevisionNotFound:
        return ErrorKind.NotFound;
      case EnterpriseControlsErrorCode.RevisionMismatch:
        return ErrorKind.PreconditionFailed;
      case EnterpriseControlsErrorCode.SecretUnreadable:
      case EnterpriseControlsErrorCode.ModelUnreachable:
        return ErrorKind.Unavailable;
      case EnterpriseControlsErrorCode.CustomModelNotFound:
        return ErrorKind.NotFound;
      case EnterpriseControlsErrorCode.ModelNotAllowed:
        return ErrorKind.Forbidden;
    }
  }
}

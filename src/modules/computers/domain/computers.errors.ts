import { DomainError, ErrorKind } from '../../../platform/http/domain-error';

export enum ComputersErrorCode {
  ComputerNotFound = 'computer_not_found',
  ServiceAccountNotFound = 'service_account_not_found',
  ProviderDisabled = 'computer_provider_disabled',
  NotAllowedByControls = 'computer_creation_not_allowed',
  ReadOnlyRole = 'read_only_role',
  NotFailed = 'computer_not_failed',
  NotComputerCredential = 'computer_credential_required',
}

export class ComputersError extends DomainError<ComputersErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case ComputersErrorCode.ComputerNotFound:
      case ComputersErrorCode.ServiceAccountNotFound:
        return ErrorKind.NotFound;
      case ComputersErrorCode.ProviderDisabled:
      case ComputersErrorCode.NotAllowedByControls:
      case ComputersErrorCode.ReadOnlyRole:
      case ComputersErrorCode.NotComputerCredential:
        return ErrorKind.Forbidden;
      case ComputersErrorCode.NotFailed:
        return ErrorKind.Conflict;
    }
  }
}

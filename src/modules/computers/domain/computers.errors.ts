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

/** The per-organization quotas on computers, named as the operator configures them. */
export enum ComputerQuota {
  Computers = 'COMPUTERS_PER_ORGANIZATION',
  Provisioning = 'PROVISIONING_PER_ORGANIZATION',
  LocalAgents = 'LOCAL_AGENTS_PER_ORGANIZATION',
}

/**
 * A quota of the organization is used up. Computers and local agents are counts of what the
 * organization has: waiting frees nothing, deleting a computer does, so 409 (the request conflicts
 * with the organization's state), which clients do not retry on their own. Provisioning is a count
 * of work in progress that frees itself as it finishes: 429, try again later.
 */
export class QuotaExceededError extends DomainError<'quota_exceeded'> {
  constructor(
    readonly quota: ComputerQuota,
    readonly limit: number,
    detail: string,
  ) {
    super('quota_exceeded', detail, { quota, limit });
  }

  get kind(): ErrorKind {
    switch (this.quota) {
      case ComputerQuota.Computers:
      case ComputerQuota.LocalAgents:
        return ErrorKind.Conflict;
      case ComputerQuota.Provisioning:
        return ErrorKind.TooManyRequests;
    }
  }
}

/** The one answer for a computer the caller may not see, whatever the reason (unknown, another organization's, another member's). */
export function computerNotFound(computerId: string, field?: string): ComputersError {
  return new ComputersError(ComputersErrorCode.ComputerNotFound, `No computer ${computerId} exists in your organization.`, field ? { field } : {});
}

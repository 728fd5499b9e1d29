import { codesOf, CodeOf, DomainError, errorClassOf, ErrorKind, ErrorTable } from '../../../platform/http/domain-error';

const COMPUTERS_ERRORS = {
  ComputerNotFound: { code: 'computer_not_found', kind: ErrorKind.NotFound },
  ServiceAccountNotFound: { code: 'service_account_not_found', kind: ErrorKind.NotFound },
  ProviderDisabled: { code: 'computer_provider_disabled', kind: ErrorKind.Forbidden },
  NotAllowedByControls: { code: 'computer_creation_not_allowed', kind: ErrorKind.Forbidden },
  ReadOnlyRole: { code: 'read_only_role', kind: ErrorKind.Forbidden },
  NotFailed: { code: 'computer_not_failed', kind: ErrorKind.Conflict },
  NotComputerCredential: { code: 'computer_credential_required', kind: ErrorKind.Forbidden },
  WorkerPoolNotFound: { code: 'worker_pool_not_found', kind: ErrorKind.NotFound },
  WorkerPoolNameTaken: { code: 'worker_pool_name_taken', kind: ErrorKind.Conflict },
  WorkerPoolInUse: { code: 'worker_pool_in_use', kind: ErrorKind.Conflict },
  StepClaimLost: { code: 'step_claim_lost', kind: ErrorKind.Conflict },
  EnrollmentTokenNotFound: { code: 'enrollment_token_not_found', kind: ErrorKind.NotFound },
  TooManyEnrollmentTokens: { code: 'too_many_enrollment_tokens', kind: ErrorKind.Conflict },
  WorkerNotFound: { code: 'worker_not_found', kind: ErrorKind.NotFound },
  WorkerSandboxRequired: { code: 'worker_sandbox_required', kind: ErrorKind.Forbidden },
  InvalidWorkerToken: { code: 'invalid_worker_token', kind: ErrorKind.Unauthenticated },
} as const satisfies ErrorTable;

export const ComputersErrorCode = codesOf(COMPUTERS_ERRORS);
export type ComputersErrorCode = CodeOf<typeof COMPUTERS_ERRORS>;

export class ComputersError extends errorClassOf(COMPUTERS_ERRORS) {}

/** The per-organization quotas on computers, named as the operator configures them. */
export enum ComputerQuota {
  Computers = 'COMPUTERS_PER_ORGANIZATION',
  Provisioning = 'PROVISIONING_PER_ORGANIZATION',
  LocalAgents = 'LOCAL_AGENTS_PER_ORGANIZATION',
  WorkerPools = 'WORKER_POOLS_PER_ORGANIZATION',
  Workers = 'WORKERS_PER_POOL',
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
      case ComputerQuota.WorkerPools:
      case ComputerQuota.Workers:
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

/** The one answer for a pool the caller may not see (unknown, or another organization's). */
export function workerPoolNotFound(poolId: string, field?: string): ComputersError {
  return new ComputersError(ComputersErrorCode.WorkerPoolNotFound, `No worker pool ${poolId} exists in your organization.`, field ? { field } : {});
}

export function workerPoolNameTaken(name: string): ComputersError {
  return new ComputersError(ComputersErrorCode.WorkerPoolNameTaken, `Your organization already has a worker pool named "${name}".`, { field: 'name' });
}

export function enrollmentTokenNotFound(poolId: string, tokenId: string): ComputersError {
  return new ComputersError(ComputersErrorCode.EnrollmentTokenNotFound, `No enrollment token ${tokenId} exists in worker pool ${poolId}.`);
}

export function tooManyEnrollmentTokens(limit: number): ComputersError {
  return new ComputersError(
    ComputersErrorCode.TooManyEnrollmentTokens,
    `The pool has ${limit} enrollment tokens that still work, as many as it may have; revoke one to create another.`,
    { limit },
  );
}

export function workerNotFound(poolId: string, workerId: string): ComputersError {
  return new ComputersError(ComputersErrorCode.WorkerNotFound, `No worker ${workerId} exists in worker pool ${poolId}.`);
}

import type { ApiSchema } from '../../../platform/http/api-schema';
import { userInfo } from 'node:os';
import { Principal } from '../../auth';
import { newId } from '../../../platform/database/ids';
import { ComputerSource, OwnerPrincipalKind } from './computer';
import { ComputerEntity, ProvisioningStepEntity } from '../entities';
import { STEP_NAMES, StepId, StepStatus } from './provisioning-step';

export type CreateComputerInput = ApiSchema<'CreateComputerBody'>;

export interface ComputerOwner {
  id: string;
  kind: OwnerPrincipalKind;
}

/** A new agent token: the secret shown once, its hash, and (for computers whose agent the server runs) the secret encrypted. */
export interface IssuedAgentToken {
  token: string;
  hash: string;
  encrypted: string | null;
}

/** A new computer's row. */
/** Where a managed computer asks to run: a pool (null: any of the organization's) and the labels its worker must have. */
export interface Placement {
  poolId: string | null;
  labels: string[];
}

export function newComputer(
  id: string,
  principal: Principal,
  owner: ComputerOwner,
  input: CreateComputerInput,
  token: IssuedAgentToken,
  fields: {
    managed: boolean;
    repos: string[];
    autoInstallDeps: boolean;
    status: ComputerEntity['status'];
    createdAt: Date;
    updatedAt: Date;
    /** Placement on a worker pool; none: the server's host. */
    placement?: Placement | null;
  },
): ComputerEntity {
  return Object.assign(new ComputerEntity(), {
    id,
    organizationId: principal.organizationId,
    ownerId: owner.id,
    ownerPrincipalKind: owner.kind,
    name: input.name,
    provider: input.provider,
    hostId: fields.managed ? newId() : input.hostId!.toLowerCase(),
    remoteUser: input.remoteUser ?? (fields.managed ? serverUser() : null),
    hostname: null,
    repos: fields.repos,
    autoInstallDeps: fields.autoInstallDeps,
    source: normalizedSource(input.source),
    status: fields.status,
    clonedRepoDirectories: [],
    agentTokenHash: token.hash,
    agentTokenEncrypted: token.encrypted,
    agentTokenCreatedAt: fields.createdAt,
    agentConnectedAt: null,
    onWorkers: !!fields.placement,
    poolId: fields.placement?.poolId ?? null,
    placementLabels: fields.placement?.labels ?? [],
    workerId: null,
    placedAt: null,
    waitingSince: fields.placement ? fields.createdAt : null,
    createdAt: fields.createdAt,
    updatedAt: fields.updatedAt,
  });
}

/** A provisioning step's row, not yet run unless `fields` say otherwise; its log session is set when the computer is stored. */
export function newStep(computerId: string, stepId: StepId, position: number, fields: Partial<ProvisioningStepEntity> = {}): ProvisioningStepEntity {
  return Object.assign(new ProvisioningStepEntity(), {
    computerId,
    position,
    stepId,
    name: STEP_NAMES[stepId],
    status: StepStatus.Pending,
    error: null,
    startedAt: null,
    completedAt: null,
    installSessionId: null,
    attempts: 0,
    claimId: null,
    leaseExpiresAt: null,
    ...fields,
  });
}

/** Ids as the database prints them (lower case), so responses never echo another spelling. */
function normalizedSource(source: ComputerSource | undefined): ComputerSource | null {
  if (!source) return null;
  return source.kind === 'computer' ? { kind: 'computer', computerId: source.computerId.toLowerCase() } : source;
}

/** The `local` provider's workspaces belong to the user the server runs as. */
function serverUser(): string {
  try {
    return userInfo().username.slice(0, 63) || 'agent';
  } catch {
    return 'agent';
  }
}

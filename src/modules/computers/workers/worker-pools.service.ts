import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppConfig } from '../../../config/app-config';
import { isUuid, newId } from '../../../platform/database/ids';
import { EventLog } from '../../../platform/events';
import { Page } from '../../../platform/http/pagination';
import { validationError } from '../../../platform/http/validation';
import { logSecurityEvent } from '../../../platform/logging/security-log';
import { ActingAs, generateWorkerEnrollmentToken } from '../../auth';
import {
  ComputerQuota,
  ComputersError,
  ComputersErrorCode,
  enrollmentTokenNotFound,
  QuotaExceededError,
  tooManyEnrollmentTokens,
  workerNotFound,
  workerPoolNameTaken,
  workerPoolNotFound,
} from '../domain/computers.errors';
import { WorkerEnrollmentTokenEntity, WorkerEntity, WorkerPoolEntity } from '../entities';
import { EnrollmentTokenData, WorkerLeftData, WorkerPoolData } from '../events';
import { WorkerPoolsRepository } from './worker-pools.repository';
import { Recovery, WorkerRecovery } from './worker-recovery';
import { WorkersRepository } from './workers.repository';
import { WorkerStatus } from './worker';

/** Enrollment tokens of one pool that still work (not revoked, not expired) at once. */
export const MAX_ENROLLMENT_TOKENS_PER_POOL = 20;

/** Who acts, in which organization: a person's principal made into this, or the operator. */
export interface PoolActor {
  organizationId: string;
  /** The user, or null for the operator. */
  userId: string | null;
  by: ActingAs;
}

export interface PoolSettings {
  name?: string;
  description?: string | null;
  maxComputersPerWorker?: number | null;
  allowUnsandboxed?: boolean;
}

/** An organization's worker pools and the tokens workers register into them with (owners, managers and the operator). */
@Injectable()
export class WorkerPoolsService {
  constructor(
    private readonly repository: WorkerPoolsRepository,
    private readonly workers: WorkersRepository,
    private readonly recovery: WorkerRecovery,
    private readonly events: EventLog,
    private readonly config: AppConfig,
  ) {}

  async create(actor: PoolActor, input: PoolSettings & { name: string }, now = new Date()): Promise<WorkerPoolEntity> {
    const pool: WorkerPoolEntity = {
      organizationId: actor.organizationId,
      id: newId(),
      name: checkedName(input.name),
      description: input.description ?? null,
      maxComputersPerWorker: input.maxComputersPerWorker ?? null,
      allowUnsandboxed: input.allowUnsandboxed ?? false,
      createdBy: actor.userId,
      createdAt: now,
      updatedAt: now,
    };
    await this.repository.transaction(async (manager) => {
      const count = await this.repository.lockPools(manager, actor.organizationId);
      const limit = this.config.WORKER_POOLS_PER_ORGANIZATION;
      if (count >= limit) {
        logSecurityEvent('quota.exceeded', { organizationId: actor.organizationId, ...actor.by.security }, { quota: ComputerQuota.WorkerPools, limit });
        throw new QuotaExceededError(
          ComputerQuota.WorkerPools,
          limit,
          `Your organization has ${count} worker pools, as many as it may have (WORKER_POOLS_PER_ORGANIZATION); delete one to create another.`,
        );
      }
      await this.refuseTakenName(manager, actor.organizationId, pool.name);
      await this.repository.insertPool(manager, pool);
      this.raisePool(manager, 'worker_pool.created', pool, actor);
    });
    logSecurityEvent('worker_pool.created', { organizationId: actor.organizationId, ...actor.by.security }, { poolId: pool.id, name: pool.name });
    return pool;
  }

  list(organizationId: string, cursor: string | undefined, limit: number): Promise<Page<WorkerPoolEntity>> {
    return this.repository.listPools(organizationId, cursor, limit);
  }

  /** The pool the organization calls by this id or name; 404 otherwise. */
  async find(organizationId: string, poolIdOrName: string, field?: string): Promise<WorkerPoolEntity> {
    const pool = isUuid(poolIdOrName)
      ? await this.repository.findPool(organizationId, poolIdOrName)
      : await this.repository.findPoolByName(organizationId, poolIdOrName);
    if (!pool) throw workerPoolNotFound(poolIdOrName, field);
    return pool;
  }

  async update(actor: PoolActor, poolId: string, changes: PoolSettings, now = new Date()): Promise<WorkerPoolEntity> {
    return this.repository.transaction(async (manager) => {
      await this.repository.lockPools(manager, actor.organizationId);
      const pool = isUuid(poolId) ? await this.repository.findPool(actor.organizationId, poolId, manager) : null;
      if (!pool) throw workerPoolNotFound(poolId);
      if (changes.name !== undefined && changes.name !== pool.name) {
        await this.refuseTakenName(manager, actor.organizationId, checkedName(changes.name));
        pool.name = changes.name;
      }
      if (changes.description !== undefined) pool.description = changes.description;
      if (changes.maxComputersPerWorker !== undefined) pool.maxComputersPerWorker = changes.maxComputersPerWorker;
      if (changes.allowUnsandboxed !== undefined) pool.allowUnsandboxed = changes.allowUnsandboxed;
      pool.updatedAt = now;
      await this.repository.savePool(manager, pool);
      this.raisePool(manager, 'worker_pool.updated', pool, actor);
      return pool;
    });
  }

  /** Deletes the pool, its enrollment tokens and its workers; refused (409) while computers were created for it. */
  async remove(actor: PoolActor, poolId: string): Promise<void> {
    let recovery: Recovery | undefined;
    const pool = await this.repository.transaction(async (manager) => {
      await this.repository.lockPools(manager, actor.organizationId);
      const pool = isUuid(poolId) ? await this.repository.findPool(actor.organizationId, poolId, manager) : null;
      if (!pool) throw workerPoolNotFound(poolId);
      // Its row first: a computer being created for it holds the row until it is in, and is counted below.
      await this.repository.lockPool(manager, pool);
      const computers = await this.workers.countPoolComputers(manager, pool);
      if (computers > 0) {
        throw new ComputersError(
          ComputersErrorCode.WorkerPoolInUse,
          `Worker pool "${pool.name}" has ${computers} computer(s) created for it; delete them first.`,
          { computers },
        );
      }
      // Its workers go with it: computers placed on them (by labels alone) are moved first, as for an eviction.
      const ended = await this.workers.end(manager, { organizationId: pool.organizationId, poolId: pool.id }, WorkerStatus.Evicted);
      for (const worker of ended) this.raiseLeft(manager, worker, 'evicted', actor);
      recovery = await this.recovery.recover(manager, ended);
      await this.repository.deletePool(manager, pool);
      this.raisePool(manager, 'worker_pool.deleted', pool, actor);
      return pool;
    });
    recovery?.committed();
    logSecurityEvent('worker_pool.deleted', { organizationId: actor.organizationId, ...actor.by.security }, { poolId: pool.id, name: pool.name });
  }

  /** A new enrollment token of the pool: only its hash is kept; the token is in the answer once. */
  async createToken(
    actor: PoolActor,
    poolId: string,
    input: { name: string; expiresAt?: Date },
    now = new Date(),
  ): Promise<{ entity: WorkerEnrollmentTokenEntity; token: string }> {
    if (input.expiresAt && input.expiresAt <= now) {
      throw validationError([{ field: 'expiresAt', message: 'must be in the future' }]);
    }
    const pool = await this.find(actor.organizationId, poolId);
    const { token, prefix, hash } = generateWorkerEnrollmentToken();
    const entity: WorkerEnrollmentTokenEntity = {
      organizationId: actor.organizationId,
      id: newId(),
      poolId: pool.id,
      name: input.name,
      prefix,
      tokenHash: hash,
      createdBy: actor.userId,
      createdAt: now,
      lastUsedAt: null,
      expiresAt: input.expiresAt ?? null,
      revokedAt: null,
    };
    await this.repository.transaction(async (manager) => {
      if ((await this.repository.countWorkingTokens(manager, pool)) >= MAX_ENROLLMENT_TOKENS_PER_POOL) {
        throw tooManyEnrollmentTokens(MAX_ENROLLMENT_TOKENS_PER_POOL);
      }
      await this.repository.insertToken(manager, entity);
      this.raiseToken(manager, 'enrollment_token.created', entity, actor);
    });
    logSecurityEvent('enrollment_token.created', { organizationId: actor.organizationId, ...actor.by.security }, { poolId: pool.id, tokenId: entity.id });
    return { entity, token };
  }

  async listTokens(organizationId: string, poolId: string, cursor: string | undefined, limit: number): Promise<Page<WorkerEnrollmentTokenEntity>> {
    const pool = await this.find(organizationId, poolId);
    return this.repository.listTokens(pool, cursor, limit);
  }

  /** Revokes the token once, ending the session of every worker registered with it; revoking again is harmless and raises nothing. */
  async revokeToken(actor: PoolActor, poolId: string, tokenId: string, now = new Date()): Promise<WorkerEnrollmentTokenEntity> {
    const pool = await this.find(actor.organizationId, poolId);
    const known = isUuid(tokenId) ? await this.repository.findToken(actor.organizationId, pool.id, tokenId) : null;
    if (!known) throw enrollmentTokenNotFound(pool.id, tokenId);
    let ended: WorkerEntity[] = [];
    let recovery: Recovery | undefined;
    const token = await this.repository.transaction(async (manager) => {
      // Registrations with the token hold the pool's row: one waiting now sees the revocation, one done is ended below.
      await this.repository.lockPool(manager, pool);
      const token = (await this.repository.revokeToken(manager, known, now)) ?? known;
      if (token.revokedAt?.getTime() === now.getTime()) this.raiseToken(manager, 'enrollment_token.revoked', token, actor);
      ended = await this.workers.end(manager, { organizationId: token.organizationId, enrollmentTokenId: token.id }, WorkerStatus.Revoked);
      for (const worker of ended) this.raiseLeft(manager, worker, 'revoked', actor);
      recovery = await this.recovery.recover(manager, ended);
      return token;
    });
    recovery?.committed();
    logSecurityEvent('enrollment_token.revoked', { organizationId: actor.organizationId, ...actor.by.security }, { poolId: pool.id, tokenId: token.id });
    for (const worker of ended) logWorkerEnded(worker, 'revoked', actor);
    return token;
  }

  async listWorkers(organizationId: string, poolId: string, cursor: string | undefined, limit: number): Promise<Page<WorkerEntity>> {
    const pool = await this.find(organizationId, poolId);
    return this.workers.list(pool, cursor, limit);
  }

  /** Ends an online worker's session at once (its next call is 401); an ended one is answered as it is. */
  async evict(actor: PoolActor, poolId: string, workerId: string): Promise<WorkerEntity> {
    const pool = await this.find(actor.organizationId, poolId);
    const known = isUuid(workerId) ? await this.workers.find(actor.organizationId, pool.id, workerId) : null;
    if (!known) throw workerNotFound(pool.id, workerId);
    let recovery: Recovery | undefined;
    const [evicted] = await this.workers.transaction(async (manager) => {
      const ended = await this.workers.end(manager, { organizationId: known.organizationId, workerId: known.id }, WorkerStatus.Evicted);
      for (const worker of ended) this.raiseLeft(manager, worker, 'evicted', actor);
      recovery = await this.recovery.recover(manager, ended);
      return ended;
    });
    recovery?.committed();
    if (evicted) logWorkerEnded(evicted, 'evicted', actor);
    return evicted ?? (await this.workers.find(actor.organizationId, pool.id, workerId)) ?? known;
  }

  private raiseLeft(manager: EntityManager, worker: WorkerEntity, reason: WorkerLeftData['reason'], actor: PoolActor): void {
    this.events.raise(manager, {
      type: 'worker.left',
      organizationId: worker.organizationId,
      actor: actor.by.event,
      data: { workerId: worker.id, poolId: worker.poolId, name: worker.name, reason },
    });
  }

  private async refuseTakenName(manager: EntityManager, organizationId: string, name: string): Promise<void> {
    if (await this.repository.findPoolByName(organizationId, name, manager)) throw workerPoolNameTaken(name);
  }

  private raisePool(
    manager: EntityManager,
    type: 'worker_pool.created' | 'worker_pool.updated' | 'worker_pool.deleted',
    pool: WorkerPoolEntity,
    actor: PoolActor,
  ): void {
    const data: WorkerPoolData = {
      poolId: pool.id,
      name: pool.name,
      maxComputersPerWorker: pool.maxComputersPerWorker,
      allowUnsandboxed: pool.allowUnsandboxed,
    };
    this.events.raise(manager, { type, organizationId: pool.organizationId, actor: actor.by.event, data });
  }

  private raiseToken(
    manager: EntityManager,
    type: 'enrollment_token.created' | 'enrollment_token.revoked',
    token: WorkerEnrollmentTokenEntity,
    actor: PoolActor,
  ): void {
    const data: EnrollmentTokenData = {
      poolId: token.poolId,
      tokenId: token.id,
      name: token.name,
      prefix: token.prefix,
      expiresAt: token.expiresAt?.getTime() ?? null,
    };
    this.events.raise(manager, { type, organizationId: token.organizationId, actor: actor.by.event, data });
  }
}

/** A pool is named by name or id alike, so a name never looks like an id. */
function checkedName(name: string): string {
  if (isUuid(name)) throw validationError([{ field: 'name', message: 'must not be a UUID (a computer names its pool by name or id)' }]);
  return name;
}

/** A worker's session ended by someone: the security log's line. */
export function logWorkerEnded(worker: WorkerEntity, reason: WorkerLeftData['reason'], actor?: PoolActor): void {
  logSecurityEvent(
    'worker.ended',
    { organizationId: worker.organizationId, ...(actor?.by.security ?? { credentialId: `worker:${worker.id}` }) },
    { workerId: worker.id, poolId: worker.poolId, reason },
  );
}

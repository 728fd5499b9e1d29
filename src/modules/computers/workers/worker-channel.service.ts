import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { newId } from '../../../platform/database/ids';
import { EventActor, EventLog } from '../../../platform/events';
import { logSecurityEvent } from '../../../platform/logging/security-log';
import { generateWorkerSessionToken, hashToken, isWellFormedWorkerEnrollmentToken, isWellFormedWorkerSessionToken, parseBearer } from '../../auth';
import { ComputerQuota, ComputersError, ComputersErrorCode, QuotaExceededError } from '../domain/computers.errors';
import { WorkerEntity, WorkerPoolEntity } from '../entities';
import { MAX_COMPUTERS_PER_WORKER, WorkerStatus, WorkerUsage } from './worker';
import { RegisterWorkerInput } from './worker-pool.schemas';
import { logWorkerEnded } from './worker-pools.service';
import { WorkersRepository } from './workers.repository';

/** A worker's registration: its session token (shown once) and the terms of its lease. */
export interface Registration {
  worker: WorkerEntity;
  pool: WorkerPoolEntity;
  sessionToken: string;
}

/**
 * The server's side of the worker channel (`/api/v0/worker`): a machine running `agent-platform worker` registers with
 * its pool's enrollment token, then proves itself with the session token it was given and keeps its lease with
 * heartbeats. Every statement is keyed by the organization and worker its token names, never by what it sends.
 */
@Injectable()
export class WorkerChannelService {
  constructor(
    private readonly workers: WorkersRepository,
    private readonly events: EventLog,
    private readonly config: AppConfig,
  ) {}

  get leaseMs(): number {
    return this.config.WORKER_LEASE_MS;
  }

  get heartbeatMs(): number {
    return Math.floor(this.config.WORKER_LEASE_MS / 3);
  }

  async register(authorization: string | undefined, input: RegisterWorkerInput, ip: string): Promise<Registration> {
    const token = bearer(authorization);
    const hash = isWellFormedWorkerEnrollmentToken(token) ? hashToken(token) : null;
    const { token: sessionToken, hash: sessionHash } = generateWorkerSessionToken();
    const registration = await this.workers.transaction(async (manager) => {
      const grant = hash ? await this.workers.lockGrant(manager, hash) : null;
      if (!grant) throw invalidToken('The enrollment token is not valid.');
      const { token: enrollment, pool } = grant;
      if (enrollment.revokedAt) throw invalidToken('The enrollment token has been revoked.');
      if (enrollment.expiresAt && enrollment.expiresAt <= new Date()) throw invalidToken('The enrollment token has expired.');
      if (!input.sandboxed && !pool.allowUnsandboxed) {
        logSecurityEvent(
          'worker.registration_refused',
          { organizationId: pool.organizationId, credentialId: `enrollment:${enrollment.id}`, ip },
          { reason: 'unsandboxed' },
        );
        throw new ComputersError(
          ComputersErrorCode.WorkerSandboxRequired,
          `Worker pool "${pool.name}" takes only sandboxed workers; run the worker with the bubblewrap sandbox, or an owner sets allowUnsandboxed on the pool.`,
        );
      }
      const online = await this.workers.countOnline(manager, pool);
      if (online >= this.config.WORKERS_PER_POOL) {
        throw new QuotaExceededError(
          ComputerQuota.Workers,
          this.config.WORKERS_PER_POOL,
          `Worker pool "${pool.name}" has ${online} workers online, as many as a pool may have (WORKERS_PER_POOL).`,
        );
      }
      const capacity = { ...input.capacity, computers: Math.min(input.capacity.computers, pool.maxComputersPerWorker ?? MAX_COMPUTERS_PER_WORKER) };
      const worker = await this.workers.insert(
        manager,
        {
          organizationId: pool.organizationId,
          id: newId(),
          poolId: pool.id,
          enrollmentTokenId: enrollment.id,
          name: input.name,
          hostname: input.hostname,
          labels: input.labels ?? [],
          capacity,
          sandboxed: input.sandboxed,
          version: input.version,
          sessionHash,
        },
        this.config.WORKER_LEASE_MS,
      );
      this.events.raise(manager, {
        type: 'worker.joined',
        organizationId: worker.organizationId,
        actor: workerActor(worker),
        data: {
          workerId: worker.id,
          poolId: worker.poolId,
          name: worker.name,
          hostname: worker.hostname,
          labels: worker.labels,
          capacity: worker.capacity,
          sandboxed: worker.sandboxed,
          version: worker.version,
        },
      });
      return { worker, pool, sessionToken };
    });
    const { worker } = registration;
    logSecurityEvent(
      'worker.registered',
      { organizationId: worker.organizationId, credentialId: `enrollment:${worker.enrollmentTokenId}`, ip },
      { workerId: worker.id, poolId: worker.poolId },
    );
    return registration;
  }

  /** The online worker this session token belongs to; 401 (saying why) otherwise. */
  async authenticate(authorization: string | undefined): Promise<WorkerEntity> {
    const token = bearer(authorization);
    const worker = isWellFormedWorkerSessionToken(token) ? await this.workers.bySessionHash(hashToken(token)) : null;
    if (!worker) throw invalidToken('The worker session token is not valid; register again with an enrollment token.');
    if (worker.status !== WorkerStatus.Online) throw ended(worker);
    return worker;
  }

  async heartbeat(worker: WorkerEntity, usage: WorkerUsage | null): Promise<WorkerEntity> {
    const renewed = await this.workers.renew(worker, usage, this.config.WORKER_LEASE_MS);
    if (!renewed) throw ended((await this.workers.find(worker.organizationId, worker.poolId, worker.id)) ?? worker);
    return renewed;
  }

  /** The worker shuts down: its session ends now (not a lease later). */
  async leave(worker: WorkerEntity): Promise<void> {
    const [left] = await this.workers.transaction(async (manager) => {
      const left = await this.workers.end(manager, { organizationId: worker.organizationId, workerId: worker.id }, WorkerStatus.Left);
      for (const one of left) {
        this.events.raise(manager, {
          type: 'worker.left',
          organizationId: one.organizationId,
          actor: workerActor(one),
          data: { workerId: one.id, poolId: one.poolId, name: one.name, reason: 'left' },
        });
      }
      return left;
    });
    if (left) logWorkerEnded(left, 'left');
  }
}

/** A worker as the event log records who acted. */
export function workerActor(worker: Pick<WorkerEntity, 'id'>): EventActor {
  return { kind: 'worker', workerId: worker.id };
}

function bearer(header: string | undefined): string {
  const token = parseBearer(header);
  if (token === null) throw invalidToken("Send the worker's token as: Authorization: Bearer <token>.");
  return token;
}

function invalidToken(detail: string): ComputersError {
  return new ComputersError(ComputersErrorCode.InvalidWorkerToken, detail);
}

function ended(worker: WorkerEntity): ComputersError {
  return new ComputersError(ComputersErrorCode.InvalidWorkerToken, `This worker's session ended (${worker.status}); register again with an enrollment token.`, {
    workerStatus: worker.status,
  });
}

import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { AppConfig } from '../../../config/app-config';
import { isUuid, newId } from '../../../platform/database/ids';
import { cloneDirectoryNames } from '../../../host/repo-location';
import { StepId } from '../../../host/step';
import { EventActor, EventLog, INSTANCE_DRAINING, OnDomainEvent, StoredEvent } from '../../../platform/events';
import { WaitRoom } from '../../../platform/long-poll';
import { InFlight } from '../../../platform/rate-limit/in-flight';
import { RateLimitError, RateLimitErrorCode } from '../../../platform/rate-limit/rate-limit.errors';
import { ServerLogs } from '../../sessions';
import { AgentTokens } from '../agent-tokens.service';
import { ComputersRepository, StepMoved } from '../computers.repository';
import { computerNotFound } from '../domain/computers.errors';
import { StepStatus } from '../domain/provisioning-step';
import { MAX_ATTEMPTS } from '../jobs/provisioning.job';
import { stepMovedEvents } from '../jobs/step-events';
import { logSecurityEvent } from '../../../platform/logging/security-log';
import { generateWorkerSessionToken, hashToken, isWellFormedWorkerEnrollmentToken, isWellFormedWorkerSessionToken, parseBearer } from '../../auth';
import { ComputerQuota, ComputersError, ComputersErrorCode, QuotaExceededError } from '../domain/computers.errors';
import { WorkerEntity, WorkerPoolEntity } from '../entities';
import { MAX_COMPUTERS_PER_WORKER, WorkerStatus } from './worker';
import {
  RegisterWorkerInput,
  WorkerAgentTokenView,
  WorkerClaimView,
  WorkerHeartbeatInput,
  WorkerHeartbeatView,
  WorkerStepFinishInput,
  WorkerStepLogInput,
} from './worker-pool.schemas';
import { logWorkerEnded } from './worker-pools.service';
import { Recovery, WorkerRecovery } from './worker-recovery';
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
export class WorkerChannelService implements BeforeApplicationShutdown {
  /** Workers' claims waiting for work, one group per worker. */
  private readonly room = new WaitRoom<string>();
  private readonly claims = new InFlight();
  private readonly stepMoved: StepMoved;

  constructor(
    private readonly workers: WorkersRepository,
    private readonly computers: ComputersRepository,
    private readonly tokens: AgentTokens,
    private readonly recovery: WorkerRecovery,
    private readonly logs: ServerLogs,
    private readonly events: EventLog,
    private readonly config: AppConfig,
  ) {
    this.stepMoved = stepMovedEvents(events);
  }

  get leaseMs(): number {
    return this.config.WORKER_LEASE_MS;
  }

  /** A third of the shorter lease: the worker's own, and its steps' claims, which its heartbeats renew. */
  get heartbeatMs(): number {
    return Math.floor(Math.min(this.config.WORKER_LEASE_MS, this.config.PROVISIONING_LEASE_MS) / 3);
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

  /**
   * Keeps the worker's lease and its steps' claims; answers what it should hold: the computers placed on it, and the
   * steps it named that are no longer its own.
   */
  async heartbeat(worker: WorkerEntity, input: WorkerHeartbeatInput): Promise<WorkerHeartbeatView> {
    const renewed = await this.workers.renew(worker, input.usage ?? null, this.config.WORKER_LEASE_MS);
    if (!renewed) throw ended((await this.workers.find(worker.organizationId, worker.poolId, worker.id)) ?? worker);
    const maxRunMs = this.config.PROVISIONING_STEP_TIMEOUT_MS + this.config.PROVISIONING_LEASE_MS;
    const lostSteps = await this.computers.renewWorkerClaims(
      { organizationId: worker.organizationId, workerId: worker.id, maxRunMs },
      input.steps ?? [],
      this.config.PROVISIONING_LEASE_MS,
    );
    const computers = await this.computers.placedOn(worker.organizationId, worker.id);
    return {
      leaseExpiresAt: renewed.leaseExpiresAt.getTime(),
      lostSteps,
      computers: computers.map((computer) => ({
        computerId: computer.id,
        status: computer.status as 'provisioning' | 'active' | 'error',
        tokenIssuedAt: computer.agentTokenCreatedAt.getTime(),
      })),
    };
  }

  /**
   * The next step of a computer placed on this worker, claimed for it; with `waitMs`, a long poll (holding no database
   * connection) woken when the worker's computers change, answering `sync` when they did.
   */
  async claim(worker: WorkerEntity, waitMs: number, abandoned?: AbortSignal): Promise<WorkerClaimView> {
    if (waitMs > 0 && this.claims.count(worker.id) >= CLAIMS_PER_WORKER) {
      const error = new RateLimitError(
        RateLimitErrorCode.RateLimited,
        `This worker already waits in ${CLAIMS_PER_WORKER} claims on this server instance; retry when one answers.`,
        { limit: CLAIMS_PER_WORKER },
      );
      error.retryAfterSeconds = 1;
      throw error;
    }
    const release = waitMs > 0 ? this.claims.take(worker.id) : undefined;
    const poll = waitMs > 0 ? this.room.open(worker.organizationId, workerKey(worker.id), worker.id) : undefined;
    const deadline = Date.now() + waitMs;
    const claimant = { kind: 'worker' as const, organizationId: worker.organizationId, workerId: worker.id };
    let changed = false;
    try {
      for (;;) {
        if (abandoned?.aborted) return { work: null, sync: changed };
        const seen = poll?.mark() ?? 0;
        const next = await this.computers.claimNext(claimant, newId(), this.config.PROVISIONING_LEASE_MS, MAX_ATTEMPTS, this.stepMoved);
        if (next && 'abandoned' in next) {
          changed = true;
          continue;
        }
        if (next) {
          poll?.tookWork();
          const { step, computer } = next.claimed;
          return {
            sync: changed,
            work: {
              computerId: computer.id,
              organizationId: computer.organizationId,
              position: step.position,
              stepId: step.stepId,
              claimId: step.claimId!,
              attempt: step.attempts,
              timeoutMs: this.config.PROVISIONING_STEP_TIMEOUT_MS,
              repos: computer.repos,
              autoInstallDeps: computer.autoInstallDeps,
            },
          };
        }
        if (changed) return { work: null, sync: true };
        const left = deadline - Date.now();
        if (!poll || left <= 0 || this.room.closing) return { work: null, sync: false };
        const outcome = await poll.wait(Math.min(left, SAFETY_RECHECK_MS), seen, abandoned);
        if (outcome === 'woken') changed = true;
        else if (outcome === 'abandoned' || Date.now() >= deadline) return { work: null, sync: false };
      }
    } finally {
      poll?.close();
      release?.();
    }
  }

  /** Adds the step's output to the computer's provisioning log; 409 when the claim is no longer the worker's. */
  async logStep(worker: WorkerEntity, input: WorkerStepLogInput): Promise<void> {
    const step = await this.computers.workerStep({ organizationId: worker.organizationId, workerId: worker.id }, input);
    if (!step) throw claimLost(input);
    if (step.installSessionId) await this.logs.append(worker.organizationId, step.installSessionId, input.text);
  }

  /**
   * Finishes a step the worker ran, fenced by its claim. The clone step's directories are the server's to say (the
   * repos' folder names in the computer's workspace), never the worker's.
   */
  async finishStep(worker: WorkerEntity, input: WorkerStepFinishInput): Promise<{ computerStatus: 'provisioning' | 'active' | 'error' }> {
    const step = await this.computers.workerStep({ organizationId: worker.organizationId, workerId: worker.id }, input);
    if (!step) throw claimLost(input);
    const fence = { organizationId: worker.organizationId, computerId: input.computerId, position: input.position, claimId: input.claimId };
    const outcome =
      input.status === 'completed'
        ? {
            status: StepStatus.Completed as const,
            clonedRepoDirectories:
              step.stepId === StepId.CloneRepos
                ? cloneDirectoryNames((await this.computers.find(input.computerId, worker.organizationId))?.repos ?? [])
                : undefined,
          }
        : { status: StepStatus.Failed as const, error: input.error ?? 'The worker reported the step failed without a reason.' };
    const finished = await this.computers.finish(fence, outcome, this.stepMoved);
    if (finished.lost) throw claimLost(input);
    return { computerStatus: finished.computer.status as 'provisioning' | 'active' | 'error' };
  }

  /** The agent token of a computer placed on this worker, for the agent it runs; 404 for any other computer. */
  async agentToken(worker: WorkerEntity, computerId: string, ip: string): Promise<WorkerAgentTokenView> {
    const computer = isUuid(computerId) ? await this.computers.find(computerId, worker.organizationId) : null;
    if (!computer || computer.workerId !== worker.id || !computer.agentTokenEncrypted) throw computerNotFound(computerId);
    logSecurityEvent(
      'computer.agent_token.released',
      { organizationId: worker.organizationId, credentialId: `worker:${worker.id}`, ip },
      { computerId: computer.id, workerId: worker.id },
    );
    return {
      computerId: computer.id,
      agentToken: this.tokens.reveal(computer.id, computer.agentTokenEncrypted),
      tokenIssuedAt: computer.agentTokenCreatedAt.getTime(),
    };
  }

  /** A computer was placed on a worker, or one of a worker's was deleted or retried: its claims look again. */
  @OnDomainEvent('computer.placement_changed')
  onPlacementChanged(event: StoredEvent<'computer.placement_changed'>): void {
    if (event.data.workerId) this.room.arrived(event.organizationId, (_, key) => key === workerKey(event.data.workerId!));
  }

  /** A computer was deleted: the worker that held it learns so (sync) and removes it. */
  @OnDomainEvent('computer.deleted')
  onComputerDeleted(event: StoredEvent<'computer.deleted'>): void {
    this.wakeOrganization(event.organizationId);
  }

  /** A step finished (the next may be ready) or a computer was retried: its worker claims again. */
  @OnDomainEvent('computer.status_changed')
  onComputerStatusChanged(event: StoredEvent<'computer.status_changed'>): void {
    this.wakeOrganization(event.organizationId);
  }

  /** The events do not say which worker holds the computer: each of the organization's waiting workers looks once. */
  private wakeOrganization(organizationId: string): void {
    if (this.room.opened(organizationId) > 0) this.room.arrived(organizationId);
  }

  /** Workers' claims waiting on this instance. */
  waitingClaims(): number {
    return this.room.waiting();
  }

  /** The instance stops: waiting claims answer now, and the workers claim again elsewhere. */
  @OnEvent(INSTANCE_DRAINING)
  beforeApplicationShutdown(): void {
    this.room.shutDown();
  }

  /** The worker shuts down: its session ends now (not a lease later). */
  async leave(worker: WorkerEntity): Promise<void> {
    let recovery: Recovery | undefined;
    const [left] = await this.workers.transaction(async (manager) => {
      const left = await this.workers.end(manager, { organizationId: worker.organizationId, workerId: worker.id }, WorkerStatus.Left);
      recovery = await this.recovery.recover(manager, left);
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
    recovery?.committed();
    if (left) logWorkerEnded(left, 'left');
  }
}

/** Long polls a worker may have waiting on one instance: more is a worker that lost count of its own. */
const CLAIMS_PER_WORKER = 2;
/** A waiting claim looks again this often even unwoken: a wake-up lost between instances costs at most this. */
const SAFETY_RECHECK_MS = 30_000;

function workerKey(workerId: string): string {
  return `worker:${workerId}`;
}

function claimLost(step: { computerId: string; position: number }): ComputersError {
  return new ComputersError(
    ComputersErrorCode.StepClaimLost,
    `Step ${step.position} of computer ${step.computerId} is no longer this worker's (finished, taken back, or the computer moved or was deleted): stop it.`,
  );
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

import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { EventLog, OnDomainEvent, StoredEvent } from '../../../platform/events';
import { ComputerStatus, ComputerTrigger, nextStatus } from '../domain/computer-status';
import { JobHandle, JobRunner } from '../../../platform/jobs';
import { chooseWorker } from './placement';
import { logWorkerEnded } from './worker-pools.service';
import { workerActor } from './worker-channel.service';
import { Recovery, WorkerRecovery } from './worker-recovery';
import { PlacementWorker, WorkersRepository } from './workers.repository';

const JOB_NAME = 'computers.workers';
const FORGET_JOB_NAME = 'computers.workers.forget';
const HOUR_MS = 3_600_000;
/** Workers ended, or an organization's computers placed, in one transaction. */
const BATCH = 100;
/** How long an ended worker stays listed: a week, then it is forgotten (every restart of a worker registers anew). */
export const ENDED_WORKERS_KEPT_MS = 7 * 86_400_000;

/**
 * Every WORKER_SWEEP_MS (the `computers.workers` job): online workers whose lease ran out become `lost`, with a
 * `worker.left` event, claimed with SKIP LOCKED so instances sweeping at once take disjoint ones; then computers waiting
 * for a worker are placed on one of their pool with room (`computer.placement_changed`), under each organization's
 * placement lock, so two instances never fill one worker past its room. A server with no worker online and no
 * computer waiting for one asks the database nothing: the sweep stops looking once neither is left, and a
 * `worker.joined` (from any instance, through the event log) or a computer waiting starts it again. Hourly
 * (`computers.workers.forget`), workers ended more than a week ago are forgotten.
 */
@Injectable()
export class WorkerSweepJob implements OnApplicationBootstrap {
  private readonly logger = new Logger(WorkerSweepJob.name);
  /** Whether a worker may be online: true at start, until a sweep finds none. */
  private watching = true;
  private readonly job: JobHandle<number>;

  constructor(
    private readonly workers: WorkersRepository,
    private readonly recovery: WorkerRecovery,
    private readonly events: EventLog,
    private readonly config: AppConfig,
    jobs: JobRunner,
  ) {
    this.job = jobs.register({ name: JOB_NAME, everyMs: config.WORKER_SWEEP_MS, run: () => (this.watching ? this.sweep() : Promise.resolve(0)) });
    jobs.register({ name: FORGET_JOB_NAME, everyMs: HOUR_MS, run: () => this.workers.forgetEnded(ENDED_WORKERS_KEPT_MS, 1000) });
  }

  /** The first look at start: a server without workers stops asking right away. */
  onApplicationBootstrap(): void {
    void this.job.runNow();
  }

  @OnDomainEvent('worker.joined')
  onWorkerJoined(): void {
    this.watching = true;
    void this.job.runNow();
  }

  /** A computer taken off an ended worker (on any instance) waits to be placed again. */
  @OnDomainEvent('computer.placement_changed')
  onPlacementChanged(event: StoredEvent<'computer.placement_changed'>): void {
    if (event.data.reason === 'worker_left') this.wake();
  }

  /** A computer waits for a worker (created, retried or taken off one on this instance): place it now, not at the next tick. */
  wake(): void {
    this.watching = true;
    setImmediate(() => void this.job.runNow());
  }

  /** Ends the lapsed workers' sessions; how many it ended. */
  async sweep(): Promise<number> {
    // Cleared before looking: a worker joining meanwhile sets it again, so it is never missed.
    this.watching = false;
    try {
      const lost = await this.endLapsed();
      await this.timeOutWaiting();
      await this.placeWaiting();
      if (await this.workers.anythingToWatch()) this.watching = true;
      return lost;
    } catch (error) {
      // Not known to be done (the database was away): the next tick looks again.
      this.watching = true;
      throw error;
    }
  }

  private async endLapsed(): Promise<number> {
    let lost = 0;
    for (let batch = BATCH; batch === BATCH;) {
      let recovery: Recovery | undefined;
      const ended = await this.workers.transaction(async (manager) => {
        const ended = await this.workers.lapse(manager, BATCH);
        recovery = await this.recovery.recover(manager, ended);
        for (const worker of ended) {
          this.events.raise(manager, {
            type: 'worker.left',
            organizationId: worker.organizationId,
            actor: workerActor(worker),
            data: { workerId: worker.id, poolId: worker.poolId, name: worker.name, reason: 'lost' },
          });
        }
        return ended;
      });
      recovery?.committed();
      for (const worker of ended) {
        logWorkerEnded(worker, 'lost');
        this.logger.warn(
          { organizationId: worker.organizationId, workerId: worker.id, poolId: worker.poolId },
          `Worker ${worker.name} lost: no heartbeat within its lease`,
        );
      }
      lost += ended.length;
      batch = ended.length;
    }
    return lost;
  }

  /** Computers no worker took within WORKER_PLACEMENT_TIMEOUT_MS go to error, saying why. */
  private async timeOutWaiting(): Promise<void> {
    for (let batch = BATCH; batch === BATCH;) {
      const timedOut = await this.workers.transaction(async (manager) => {
        const timedOut = await this.workers.timeOutWaiting(manager, this.config.WORKER_PLACEMENT_TIMEOUT_MS, BATCH);
        for (const computer of timedOut) {
          this.events.raise(manager, {
            type: 'computer.status_changed',
            organizationId: computer.organizationId,
            actor: { kind: 'system' },
            data: {
              computerId: computer.id,
              provider: computer.provider,
              from: ComputerStatus.Provisioning,
              to: nextStatus(ComputerTrigger.PlacementTimedOut, ComputerStatus.Provisioning)!,
              step: { stepId: computer.stepId, status: 'failed', error: computer.error },
            },
          });
        }
        return timedOut;
      });
      batch = timedOut.length;
    }
  }

  /** Places the computers waiting for a worker, organization by organization; how many it placed. */
  private async placeWaiting(): Promise<number> {
    let placed = 0;
    for (const organizationId of await this.workers.organizationsWaiting(BATCH)) {
      placed += await this.workers.transaction(async (manager) => {
        const { waiting, workers } = await this.workers.lockForPlacement(manager, organizationId, BATCH);
        let count = 0;
        for (const computer of waiting) {
          const worker = chooseWorker(computer, workers) as PlacementWorker | null;
          if (!worker) continue;
          await this.workers.place(manager, organizationId, computer.id, worker.id);
          this.events.raise(manager, {
            type: 'computer.placement_changed',
            organizationId,
            actor: { kind: 'system' },
            data: { computerId: computer.id, workerId: worker.id, poolId: worker.poolId, reason: 'placed' },
          });
          this.logger.log(
            { organizationId, computerId: computer.id, workerId: worker.id },
            `Computer ${computer.id} placed on worker ${worker.name} (pool ${worker.poolName})`,
          );
          count += 1;
        }
        return count;
      });
    }
    return placed;
  }
}

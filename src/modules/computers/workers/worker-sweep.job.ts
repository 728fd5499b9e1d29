import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { EventLog } from '../../../platform/events';
import { JobRunner } from '../../../platform/jobs';
import { logWorkerEnded } from './worker-pools.service';
import { workerActor } from './worker-channel.service';
import { WorkersRepository } from './workers.repository';

const JOB_NAME = 'computers.workers';
/** Workers ended in one transaction. */
const BATCH = 100;
/** How long an ended worker stays listed: a week, then it is forgotten (every restart of a worker registers anew). */
export const ENDED_WORKERS_KEPT_MS = 7 * 86_400_000;

/**
 * Every WORKER_SWEEP_MS (the `computers.workers` job): online workers whose lease ran out become `lost`, with a
 * `worker.left` event, claimed with SKIP LOCKED so instances sweeping at once take disjoint ones; workers ended more
 * than a week ago are forgotten.
 */
@Injectable()
export class WorkerSweepJob {
  private readonly logger = new Logger(WorkerSweepJob.name);

  constructor(
    private readonly workers: WorkersRepository,
    private readonly events: EventLog,
    config: AppConfig,
    jobs: JobRunner,
  ) {
    jobs.register({ name: JOB_NAME, everyMs: config.WORKER_SWEEP_MS, run: () => this.sweep() });
  }

  async sweep(): Promise<number> {
    let lost = 0;
    for (let batch = BATCH; batch === BATCH;) {
      const ended = await this.workers.transaction(async (manager) => {
        const ended = await this.workers.lapse(manager, BATCH);
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
    await this.workers.forgetEnded(ENDED_WORKERS_KEPT_MS, 1000);
    return lost;
  }
}

import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { AppConfig } from '../../../config/app-config';
import { SessionsService } from '../../sessions';
import { EnterpriseControlsRepository } from '../enterprise-controls.repository';

const JOB_NAME = 'enterprise-controls.session-retention';
const DAY_MS = 86_400_000;
/** Sessions deleted per statement: each batch is a short transaction, however much is due. */
export const RETENTION_BATCH = 500;

/**
 * Enforces `sessionRetentionDays`: sessions with no activity for that many days are deleted with
 * their messages. Every instance sweeps (`@nestjs/schedule` fires everywhere); each batch claims
 * its rows with `FOR UPDATE SKIP LOCKED`, so instances sweeping at once delete disjoint batches
 * and none waits for another.
 */
@Injectable()
export class SessionRetentionJob implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(SessionRetentionJob.name);
  private sweeping: Promise<number> | null = null;
  private stopping = false;

  constructor(
    private readonly repository: EnterpriseControlsRepository,
    private readonly sessions: SessionsService,
    private readonly scheduler: SchedulerRegistry,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.scheduler.addInterval(JOB_NAME, setInterval(() => void this.sweep(), this.config.RETENTION_SWEEP_MS));
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (this.scheduler.doesExist('interval', JOB_NAME)) this.scheduler.deleteInterval(JOB_NAME);
    await this.sweeping;
  }

  /** One sweep over every organization with a retention; how many sessions it deleted. */
  sweep(now = new Date()): Promise<number> {
    this.sweeping ??= this.run(now)
      .catch((error: Error) => {
        this.logger.error(`Session retention sweep failed: ${error.message}`, error.stack);
        return 0;
      })
      .finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  private async run(now: Date): Promise<number> {
    let total = 0;
    for (const { organizationId, days } of await this.repository.retentionPolicies()) {
      const before = new Date(now.getTime() - days * DAY_MS);
      let deleted = 0;
      let batch: number;
      do {
        if (this.stopping) return total;
        batch = await this.sessions.purgeInactive(organizationId, before, RETENTION_BATCH);
        deleted += batch;
      } while (batch === RETENTION_BATCH);
      if (deleted > 0) this.logger.log({ organizationId, deleted, retentionDays: days }, `Deleted ${deleted} session(s) past retention`);
      total += deleted;
    }
    return total;
  }
}

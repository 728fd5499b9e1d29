import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { AppConfig } from '../../../config/app-config';
import { OnDomainEvent, StoredEvent } from '../../../platform/events';
import { SessionRules } from '../ports/session-policy';
import { SessionsRepository } from '../sessions.repository';

const JOB_NAME = 'sessions.retention';
const DAY_MS = 86_400_000;
/** Sessions deleted per statement: each batch is a short transaction, however much is due. */
export const RETENTION_BATCH = 500;

/**
 * Enforces the controls' `sessionRetentionDays` (read through the SessionRules contract): sessions
 * with no activity for that many days are deleted with their messages. It sweeps every
 * RETENTION_SWEEP_MS, and at once when an organization's retention is revised (`controls.revised`,
 * on every instance), so a shorter retention takes effect without waiting for the schedule. Each
 * batch claims its rows with `FOR UPDATE SKIP LOCKED`, so instances sweeping at once delete disjoint
 * batches and none waits for another.
 */
@Injectable()
export class SessionRetentionJob implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(SessionRetentionJob.name);
  /** The sweep under way, and the one asked for meanwhile (it must read the policies again). */
  private sweeping: Promise<number> | null = null;
  private next: Promise<number> | null = null;
  private stopping = false;

  constructor(
    private readonly rules: SessionRules,
    private readonly repository: SessionsRepository,
    private readonly scheduler: SchedulerRegistry,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.scheduler.addInterval(JOB_NAME, setInterval(() => void this.sweep(), this.config.RETENTION_SWEEP_MS));
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (this.scheduler.doesExist('interval', JOB_NAME)) this.scheduler.deleteInterval(JOB_NAME);
    await (this.next ?? this.sweeping);
  }

  @OnDomainEvent('controls.revised')
  onControlsRevised(event: StoredEvent<'controls.revised'>): void {
    if (event.data.changedSettings.includes('sessionRetentionDays')) void this.sweep();
  }

  /**
   * A sweep over every organization with a retention, starting now or right after the one under
   * way; how many sessions it deleted.
   */
  sweep(now?: Date): Promise<number> {
    if (!this.sweeping) {
      this.sweeping = this.run(now ?? new Date())
        .catch((error: Error) => {
          this.logger.error(`Session retention sweep failed: ${error.message}`, error.stack);
          return 0;
        })
        .finally(() => (this.sweeping = null));
      return this.sweeping;
    }
    this.next ??= this.sweeping.then(() => {
      this.next = null;
      return this.sweep(now);
    });
    return this.next;
  }

  private async run(now: Date): Promise<number> {
    let total = 0;
    for (const { organizationId, days } of await this.rules.retentionPolicies()) {
      const before = new Date(now.getTime() - days * DAY_MS);
      let deleted = 0;
      let batch: number;
      do {
        if (this.stopping) return total;
        batch = await this.repository.deleteInactive(organizationId, before, RETENTION_BATCH);
        deleted += batch;
      } while (batch === RETENTION_BATCH);
      if (deleted > 0) this.logger.log({ organizationId, deleted, retentionDays: days }, `Deleted ${deleted} session(s) past retention`);
      total += deleted;
    }
    return total;
  }
}

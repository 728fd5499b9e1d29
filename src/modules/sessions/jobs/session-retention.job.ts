import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { OnDomainEvent, StoredEvent } from '../../../platform/events';
import { JobHandle, JobRunner } from '../../../platform/jobs';
import { SessionRules } from '../contracts/session-rules';
import { SessionsRepository } from '../sessions.repository';

const JOB_NAME = 'sessions.retention';
const DAY_MS = 86_400_000;
/** Sessions deleted per statement: each batch is a short transaction, however much is due. */
export const RETENTION_BATCH = 500;

/**
 * Enforces the controls' `sessionRetentionDays` (read through the SessionRules contract): sessions
 * with no activity for that many days are deleted with their messages. It sweeps every
 * RETENTION_SWEEP_MS (the `sessions.retention` job), and at once when an organization's retention is revised (`controls.revised`,
 * on every instance), so a shorter retention takes effect without waiting for the schedule. Each
 * batch claims its rows with `FOR UPDATE SKIP LOCKED`, so instances sweeping at once delete disjoint
 * batches and none waits for another.
 */
@Injectable()
export class SessionRetentionJob {
  private readonly logger = new Logger(SessionRetentionJob.name);
  private readonly job: JobHandle<number>;

  constructor(
    private readonly rules: SessionRules,
    private readonly repository: SessionsRepository,
    config: AppConfig,
    jobs: JobRunner,
  ) {
    this.job = jobs.register({ name: JOB_NAME, everyMs: config.RETENTION_SWEEP_MS, run: (signal) => this.run(signal) });
  }

  @OnDomainEvent('controls.revised')
  onControlsRevised(event: StoredEvent<'controls.revised'>): void {
    if (event.data.changedSettings.includes('sessionRetentionDays')) void this.sweep();
  }

  /**
   * A sweep over every organization with a retention, starting now or right after the one under
   * way (it must read the policies again); how many sessions it deleted (0 when it failed).
   */
  async sweep(): Promise<number> {
    return (await this.job.runNow()) ?? 0;
  }

  private async run(signal: AbortSignal): Promise<number> {
    const now = new Date();
    let total = 0;
    for (const { organizationId, days } of await this.rules.retentionPolicies()) {
      const before = new Date(now.getTime() - days * DAY_MS);
      let deleted = 0;
      let batch: number;
      do {
        if (signal.aborted) return total;
        batch = await this.repository.deleteInactive(organizationId, before, RETENTION_BATCH);
        deleted += batch;
      } while (batch === RETENTION_BATCH);
      if (deleted > 0) this.logger.log({ organizationId, deleted, retentionDays: days }, `Deleted ${deleted} session(s) past retention`);
      total += deleted;
    }
    return total;
  }
}

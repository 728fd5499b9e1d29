import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { DurableListeners } from '../../../platform/events';
import { JobHandle, JobRunner } from '../../../platform/jobs';
import { Metrics } from '../../../platform/metrics';
import { AnalyticsRepository } from '../analytics.repository';
import { ACTIVITY_FACTS_LISTENER } from '../activity-facts.listener';
import { AnalyticsRollupService, RollupResult } from '../analytics-rollup.service';

const JOB_NAME = 'analytics.rollup';

/**
 * Runs the rollup at start-up (for days not rolled up yet) and every ANALYTICS_ROLLUP_MS on every
 * instance, as the `analytics.rollup` job; runs on one instance never overlap, and instances share
 * the work day by day.
 */
@Injectable()
export class AnalyticsRollupJob {
  private readonly job: JobHandle<RollupResult>;

  constructor(
    private readonly rollup: AnalyticsRollupService,
    config: AppConfig,
    private readonly listeners: DurableListeners,
    jobs: JobRunner,
    repository: AnalyticsRepository,
    metrics: Metrics,
  ) {
    metrics.gauge({
      name: 'analytics_rollup_pending_days',
      help: 'Days of activity (all organizations) waiting to be rolled up: the analytics endpoints do not show them yet.',
      read: () => repository.pendingDays(new Date().toISOString().slice(0, 10)),
    });
    this.job = jobs.register({
      name: JOB_NAME,
      everyMs: config.ANALYTICS_ROLLUP_MS,
      runAtStart: true,
      run: (signal) => this.rollup.run({ shouldStop: () => signal.aborted }),
    });
  }

  /**
   * A run now, for one organization (the owner's trigger) or all: after the one in progress and
   * after the facts listener has caught up with the organization's events, so it sees the newest facts.
   */
  async runNow(organizationId?: string): Promise<RollupResult> {
    if (organizationId) await this.listeners.catchUp(ACTIVITY_FACTS_LISTENER, organizationId);
    else await this.listeners.drain();
    await this.job.idle();
    return this.rollup.run({ organizationId, shouldStop: () => this.job.signal.aborted });
  }
}

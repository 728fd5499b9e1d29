import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { AppConfig } from '../../../config/app-config';
import { DurableListeners } from '../../../platform/events';
import { ACTIVITY_FACTS_LISTENER } from '../activity-facts.listener';
import { AnalyticsRollupService, RollupResult } from '../analytics-rollup.service';

const JOB_NAME = 'analytics.rollup';

/**
 * Runs the rollup at start-up (for days not rolled up yet) and every ANALYTICS_ROLLUP_MS on every
 * instance; runs on one instance never overlap, and instances share the work day by day.
 */
@Injectable()
export class AnalyticsRollupJob implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(AnalyticsRollupJob.name);
  private running: Promise<RollupResult> | null = null;
  private stopping = false;

  constructor(
    private readonly rollup: AnalyticsRollupService,
    private readonly scheduler: SchedulerRegistry,
    private readonly config: AppConfig,
    private readonly listeners: DurableListeners,
  ) {}

  onApplicationBootstrap(): void {
    this.scheduler.addInterval(JOB_NAME, setInterval(() => void this.runOnce(), this.config.ANALYTICS_ROLLUP_MS));
    void this.runOnce();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (this.scheduler.doesExist('interval', JOB_NAME)) this.scheduler.deleteInterval(JOB_NAME);
    await this.running;
  }

  /** One run, or the one in progress. */
  runOnce(): Promise<RollupResult> {
    this.running ??= this.rollup
      .run({ shouldStop: () => this.stopping })
      .catch((error: Error) => {
        this.logger.error(`Analytics rollup failed: ${error.message}`, error.stack);
        return { days: [] };
      })
      .finally(() => (this.running = null));
    return this.running;
  }

  /**
   * A run now, for one organization (the owner's trigger) or all: after the one in progress and
   * after the facts listener has caught up with the organization's events, so it sees the newest facts.
   */
  async runNow(organizationId?: string): Promise<RollupResult> {
    if (organizationId) await this.listeners.catchUp(ACTIVITY_FACTS_LISTENER, organizationId);
    else await this.listeners.drain();
    await this.running;
    return this.rollup.run({ organizationId, shouldStop: () => this.stopping });
  }
}

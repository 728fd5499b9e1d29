import { BeforeApplicationShutdown, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { JobHandle, JobRunner } from '../../../platform/jobs';
import { WebhookAttempts } from '../delivery/webhook-attempts';
import { WebhooksRepository } from '../webhooks.repository';

const FORGET_EVERY_MS = 10 * 60_000;

/**
 * Sends the queued deliveries: up to WEBHOOK_CONCURRENCY attempts at once per instance, claimed by
 * the `webhooks.delivery` job, every WEBHOOK_POLL_MS and whenever deliveries were queued or an
 * attempt ended (`poke`); the `webhooks.forget-finished` job forgets old finished deliveries.
 * A delivery is claimed with `FOR UPDATE SKIP LOCKED` and a lease, so however many instances run,
 * each attempt is made by one; one that dies mid-attempt leaves a lease that lapses, and the delivery
 * is tried again (at least once). What one attempt does is WebhookAttempts'.
 */
@Injectable()
export class WebhookDeliveryJob implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly inFlight = new Set<Promise<void>>();
  private delivery: JobHandle<void> | null = null;
  private forgetting: JobHandle<void> | null = null;
  private nextRetry: NodeJS.Timeout | null = null;
  private closing = false;

  constructor(
    private readonly config: AppConfig,
    private readonly repository: WebhooksRepository,
    private readonly attempts: WebhookAttempts,
    private readonly jobs: JobRunner,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.WEBHOOK_CONCURRENCY === 0) return;
    this.delivery = this.jobs.register({
      name: 'webhooks.delivery',
      everyMs: this.config.WEBHOOK_POLL_MS,
      runAtStart: true,
      run: (signal) => this.claim(signal),
    });
    this.forgetting = this.jobs.register({ name: 'webhooks.forget-finished', everyMs: FORGET_EVERY_MS, run: () => this.forgetFinished() });
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    // No claim after this: the attempts below are all there are.
    await Promise.all([this.delivery?.stop(), this.forgetting?.stop()]);
    if (this.nextRetry) clearTimeout(this.nextRetry);
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
    this.attempts.close();
  }

  /** Looks for deliveries due now (new ones were just queued, or an attempt ended and a slot is free): right after the look under way. */
  poke(): void {
    if (this.closing || this.config.WEBHOOK_CONCURRENCY === 0) return;
    void this.delivery?.runNow();
  }

  /** Claims due deliveries while this instance has free slots; each attempt runs in the background. */
  private async claim(signal: AbortSignal): Promise<void> {
    for (;;) {
      const free = this.config.WEBHOOK_CONCURRENCY - this.inFlight.size;
      if (free <= 0 || signal.aborted) return;
      const claimed = await this.repository.claimDue(free, this.config.WEBHOOK_TIMEOUT_MS + this.config.WEBHOOK_LEASE_MARGIN_MS);
      for (const delivery of claimed) {
        const attempt = this.attempts.make(delivery).finally(() => {
          this.inFlight.delete(attempt);
          this.poke();
        });
        this.inFlight.add(attempt);
      }
      // A full batch: more may be due.
      if (claimed.length < free) return this.wakeForNextRetry();
    }
  }

  /** Sleeps until the next retry is due (on this instance or another), so an idle server polls only every WEBHOOK_POLL_MS. */
  private async wakeForNextRetry(): Promise<void> {
    const next = await this.repository.nextDue().catch(() => null);
    if (this.nextRetry) clearTimeout(this.nextRetry);
    this.nextRetry = null;
    if (!next || this.closing) return;
    const inMs = Math.max(0, next.getTime() - Date.now());
    if (inMs >= this.config.WEBHOOK_POLL_MS) return;
    this.nextRetry = setTimeout(() => {
      this.nextRetry = null;
      this.poke();
    }, inMs);
    this.nextRetry.unref();
  }

  private async forgetFinished(): Promise<void> {
    await this.repository.forgetFinished(new Date(Date.now() - this.config.EVENT_RETENTION_DAYS * 86_400_000));
  }
}

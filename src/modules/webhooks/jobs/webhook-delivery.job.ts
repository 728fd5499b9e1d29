import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { EventLog } from '../../../platform/events';
import { JobHandle, JobRunner } from '../../../platform/jobs';
import { logSecurityEvent } from '../../../platform/logging/security-log';
import { SecretBox } from '../../../platform/secrets/secret-box';
import { EventPresenter } from '../../events';
import { WebhookSender } from '../delivery/webhook-sender';
import { parseStoredPayload } from '../domain/payload';
import { nextRetryDelay } from '../domain/retry-schedule';
import { ClaimedDelivery, WebhooksRepository } from '../webhooks.repository';

const FORGET_EVERY_MS = 10 * 60_000;

/**
 * Sends the queued deliveries: up to WEBHOOK_CONCURRENCY attempts at once per instance, claimed by
 * the `webhooks.delivery` job, every WEBHOOK_POLL_MS and whenever deliveries were queued or an
 * attempt ended (`poke`); the `webhooks.forget-finished` job forgets old finished deliveries.
 * A delivery is claimed with `FOR UPDATE SKIP LOCKED` and a lease, so however many instances run,
 * each attempt is made by one; one that dies mid-attempt leaves a lease that lapses, and the delivery
 * is tried again (at least once). A 2xx answer delivers it; anything else is retried on
 * WEBHOOK_RETRY_SCHEDULE_MS, then failed. A webhook failing without a success for
 * WEBHOOK_DISABLE_AFTER_MS is disabled, with a `webhook.disabled` event.
 */
@Injectable()
export class WebhookDeliveryJob implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(WebhookDeliveryJob.name);
  private readonly inFlight = new Set<Promise<void>>();
  private delivery: JobHandle<void> | null = null;
  private forgetting: JobHandle<void> | null = null;
  private nextRetry: NodeJS.Timeout | null = null;
  private closing = false;

  constructor(
    private readonly config: AppConfig,
    private readonly repository: WebhooksRepository,
    private readonly sender: WebhookSender,
    private readonly box: SecretBox,
    private readonly events: EventLog,
    private readonly presenter: EventPresenter,
    private readonly jobs: JobRunner,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.WEBHOOK_CONCURRENCY === 0) return;
    this.delivery = this.jobs.register({ name: 'webhooks.delivery', everyMs: this.config.WEBHOOK_POLL_MS, runAtStart: true, run: (signal) => this.claim(signal) });
    this.forgetting = this.jobs.register({ name: 'webhooks.forget-finished', everyMs: FORGET_EVERY_MS, run: () => this.forgetFinished() });
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    // No claim after this: the attempts below are all there are.
    await Promise.all([this.delivery?.stop(), this.forgetting?.stop()]);
    if (this.nextRetry) clearTimeout(this.nextRetry);
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
    this.sender.close();
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
        const attempt = this.attempt(delivery).finally(() => {
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

  /** The public event, as streams show it: with the message when the organization keeps message history. */
  private async bodyOf(delivery: ClaimedDelivery): Promise<string> {
    const [event] = await this.presenter.presentFor(delivery.organizationId, [parseStoredPayload(delivery.payload)]);
    return JSON.stringify(event);
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    try {
      const started = new Date();
      const outcome = await this.sender.send({
        url: delivery.url,
        secret: this.box.decrypt(delivery.secret, delivery.webhookId),
        messageId: delivery.eventId,
        body: await this.bodyOf(delivery),
      });
      if (outcome.refused) {
        logSecurityEvent('webhook.destination_refused', { organizationId: delivery.organizationId }, { webhookId: delivery.webhookId, reason: outcome.error ?? '' });
      }
      const attempt = { at: started.getTime(), statusCode: outcome.statusCode, durationMs: outcome.durationMs, error: outcome.error };
      const retryInMs = outcome.ok ? null : nextRetryDelay(this.config.webhookRetrySchedule, delivery.retries);
      const next = outcome.ok ? ({ status: 'delivered' } as const) : retryInMs === null ? ({ status: 'failed' } as const) : ({ status: 'pending', retryInMs } as const);
      await this.repository.transaction(async (manager) => {
        if (!(await this.repository.recordAttempt(manager, delivery, attempt, next))) return;
        if (outcome.ok) return this.repository.markHealthy(manager, delivery.webhookId);
        const webhook = await this.repository.markFailing(manager, delivery.webhookId, started);
        const now = new Date();
        if (!webhook?.enabled || !webhook.failingSince || now.getTime() - webhook.failingSince.getTime() < this.config.WEBHOOK_DISABLE_AFTER_MS) return;
        await this.repository.disableFailing(manager, webhook.id, (await this.events.bounds(webhook.organizationId, manager)).last, now);
        this.events.raise(manager, {
          type: 'webhook.disabled',
          organizationId: webhook.organizationId,
          actor: { kind: 'system' },
          data: {
            webhookId: webhook.id,
            origin: new URL(webhook.url).origin,
            eventTypes: webhook.eventTypes,
            enabled: false,
            reason: 'endpoint_failing',
            failingSince: webhook.failingSince.getTime(),
            lastError: outcome.error ?? `answered ${outcome.statusCode}`,
          },
        });
        this.logger.warn({ webhookId: webhook.id, organizationId: webhook.organizationId }, 'Disabled a webhook whose deliveries kept failing');
      });
    } catch (error) {
      // The lease lapses and the delivery is tried again.
      if (!this.closing) this.logger.error({ err: error, deliveryId: delivery.id, webhookId: delivery.webhookId }, 'A webhook delivery attempt could not be recorded');
    }
  }

  private async forgetFinished(): Promise<void> {
    await this.repository.forgetFinished(new Date(Date.now() - this.config.EVENT_RETENTION_DAYS * 86_400_000));
  }
}

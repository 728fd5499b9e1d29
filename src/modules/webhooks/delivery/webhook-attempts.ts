import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { EventLog } from '../../../platform/events';
import { logSecurityEvent } from '../../../platform/logging/security-log';
import { SecretBox } from '../../../platform/secrets/secret-box';
import { EventPresenter } from '../../events';
import { parseStoredPayload } from '../domain/payload';
import { nextRetryDelay } from '../domain/retry-schedule';
import { ClaimedDelivery, WebhooksRepository } from '../webhooks.repository';
import { WebhookSender } from './webhook-sender';

/**
 * One attempt of a delivery: the event as streams show it, signed with the webhook's secret and sent; then, in one
 * transaction, the attempt in the delivery's log and its next state. A 2xx answer delivers it; anything else is
 * retried on WEBHOOK_RETRY_SCHEDULE_MS, then failed. A webhook failing without a success for
 * WEBHOOK_DISABLE_AFTER_MS is disabled, with a `webhook.disabled` event.
 */
@Injectable()
export class WebhookAttempts {
  private readonly logger = new Logger(WebhookAttempts.name);

  constructor(
    private readonly config: AppConfig,
    private readonly repository: WebhooksRepository,
    private readonly sender: WebhookSender,
    private readonly box: SecretBox,
    private readonly events: EventLog,
    private readonly presenter: EventPresenter,
  ) {}

  /** The public event, as streams show it: with the message when the organization keeps message history. */
  private async bodyOf(delivery: ClaimedDelivery): Promise<string> {
    const [event] = await this.presenter.presentFor(delivery.organizationId, [parseStoredPayload(delivery.payload)]);
    return JSON.stringify(event);
  }

  /** One attempt of a claimed delivery, recorded with its outcome; never rejects (an unrecorded attempt's lease lapses). */
  async make(delivery: ClaimedDelivery): Promise<void> {
    try {
      const started = new Date();
      const outcome = await this.sender.send({
        url: delivery.url,
        secret: this.box.decrypt(delivery.secret, delivery.webhookId),
        messageId: delivery.eventId,
        body: await this.bodyOf(delivery),
      });
      if (outcome.refused) {
        logSecurityEvent(
          'webhook.destination_refused',
          { organizationId: delivery.organizationId },
          { webhookId: delivery.webhookId, reason: outcome.error ?? '' },
        );
      }
      const attempt = { at: started.getTime(), statusCode: outcome.statusCode, durationMs: outcome.durationMs, error: outcome.error };
      const retryInMs = outcome.ok ? null : nextRetryDelay(this.config.webhookRetrySchedule, delivery.retries);
      const next = outcome.ok
        ? ({ status: 'delivered' } as const)
        : retryInMs === null
          ? ({ status: 'failed' } as const)
          : ({ status: 'pending', retryInMs } as const);
      await this.repository.transaction(async (manager) => {
        if (!(await this.repository.recordAttempt(manager, delivery, attempt, next))) return;
        const key = { organizationId: delivery.organizationId, id: delivery.webhookId };
        if (outcome.ok) return this.repository.markHealthy(manager, key);
        const webhook = await this.repository.markFailing(manager, key, started);
        const now = new Date();
        if (!webhook?.enabled || !webhook.failingSince || now.getTime() - webhook.failingSince.getTime() < this.config.WEBHOOK_DISABLE_AFTER_MS) return;
        await this.repository.disableFailing(manager, webhook, (await this.events.bounds(webhook.organizationId, manager)).last, now);
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
      this.logger.error({ err: error, deliveryId: delivery.id, webhookId: delivery.webhookId }, 'A webhook delivery attempt could not be recorded');
    }
  }

  /** Closes the kept connections (at shutdown, once no attempt is in flight). */
  close(): void {
    this.sender.close();
  }
}

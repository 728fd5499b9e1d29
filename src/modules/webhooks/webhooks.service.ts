import { Injectable } from '@nestjs/common';
import { isUuid, newId } from '../../platform/database/ids';
import { EventLog } from '../../platform/events';
import { Page } from '../../platform/http/pagination';
import { validationError } from '../../platform/http/validation';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { SecretBox } from '../../platform/secrets/secret-box';
import { actingAs, Principal, securityActorOf } from '../auth';
import { WebhookSender } from './delivery/webhook-sender';
import { generateSecret, secretHint } from './domain/signing';
import { deliveryNotFound, tooManyWebhooks, WebhookError, WebhookErrorCode, webhookDisabled, webhookNotFound } from './domain/webhook.errors';
import { WebhookSummary } from './events';
import { CreateWebhookInput, UpdateWebhookInput } from './schemas/webhook.schemas';
import { DeliveryRow, DeliveryStatus, WebhookRow, WebhooksRepository } from './webhooks.repository';

/** Webhooks one organization may have. */
export const MAX_WEBHOOKS_PER_ORGANIZATION = 50;
const MAX_URL_LENGTH = 2048;

/** Owners' and managers' webhooks: configuration, secrets, and the delivery log. */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly repository: WebhooksRepository,
    private readonly box: SecretBox,
    private readonly events: EventLog,
    private readonly sender: WebhookSender,
  ) {}

  /** Creates a webhook; its secret is in the answer only. It receives the events committed after it. */
  async create(principal: Principal, input: CreateWebhookInput): Promise<{ webhook: WebhookRow; secret: string }> {
    const url = this.checkUrl(principal, input.url);
    const secret = generateSecret();
    const id = newId();
    const now = new Date();
    const { last } = await this.events.bounds(principal.organizationId);
    const webhook: WebhookRow = {
      id,
      organizationId: principal.organizationId,
      url,
      description: input.description ?? null,
      eventTypes: [...new Set(input.eventTypes ?? [])].sort(),
      enabled: input.enabled ?? true,
      secret: this.box.encrypt(secret, id),
      secretHint: secretHint(secret),
      startsAfterSeq: last,
      pausedAfterSeq: input.enabled === false ? last : null,
      resumedAfterSeq: null,
      failingSince: null,
      disabledReason: null,
      createdBy: principal.userId,
      createdAt: now,
      updatedAt: now,
    };
    await this.repository.transaction(async (manager) => {
      if ((await this.repository.countWebhooks(manager, principal.organizationId)) >= MAX_WEBHOOKS_PER_ORGANIZATION) {
        throw tooManyWebhooks(MAX_WEBHOOKS_PER_ORGANIZATION);
      }
      await this.repository.insertWebhook(manager, webhook);
      this.events.raise(manager, {
        type: 'webhook.created',
        organizationId: principal.organizationId,
        actor: actingAs(principal).event,
        data: summaryOf(webhook),
      });
    });
    logSecurityEvent('webhook.created', securityActorOf(principal), { webhookId: id, host: new URL(url).host });
    return { webhook, secret };
  }

  list(principal: Principal, cursor: string | undefined, limit: number): Promise<Page<WebhookRow>> {
    return this.repository.listWebhooks(principal.organizationId, cursor, limit);
  }

  async get(principal: Principal, id: string): Promise<WebhookRow> {
    const webhook = isUuid(id) ? await this.repository.findWebhook(principal.organizationId, id) : null;
    if (!webhook) throw webhookNotFound(id);
    return webhook;
  }

  /** Changes the fields given. Enabling a webhook clears what the server knew of its failures. */
  async update(principal: Principal, id: string, input: UpdateWebhookInput): Promise<WebhookRow> {
    const url = input.url === undefined ? undefined : this.checkUrl(principal, input.url);
    if (!isUuid(id)) throw webhookNotFound(id);
    const updated = await this.repository.transaction(async (manager) => {
      const webhook = await this.repository.findWebhook(principal.organizationId, id, manager, true);
      if (!webhook) throw webhookNotFound(id);
      const next: WebhookRow = { ...webhook, updatedAt: new Date() };
      if (url !== undefined) next.url = url;
      if (input.eventTypes !== undefined) next.eventTypes = [...new Set(input.eventTypes)].sort();
      if (input.description !== undefined) next.description = input.description;
      if (input.enabled !== undefined && input.enabled !== webhook.enabled) {
        // The pause covers the events numbered while it lasted, however late the queueing listener reaches them.
        const { last } = await this.events.bounds(principal.organizationId, manager);
        next.enabled = input.enabled;
        if (input.enabled) {
          next.failingSince = null;
          next.disabledReason = null;
          next.resumedAfterSeq = last;
        } else {
          next.pausedAfterSeq = last;
          next.resumedAfterSeq = null;
        }
      }
      const changes = (['url', 'eventTypes', 'description', 'enabled'] as const).filter(
        (field) => JSON.stringify(next[field]) !== JSON.stringify(webhook[field]),
      );
      if (changes.length === 0) return webhook;
      await this.repository.updateWebhook(manager, next);
      this.events.raise(manager, {
        type: 'webhook.updated',
        organizationId: principal.organizationId,
        actor: actingAs(principal).event,
        data: { ...summaryOf(next), changes },
      });
      return next;
    });
    logSecurityEvent('webhook.updated', securityActorOf(principal), { webhookId: id });
    return updated;
  }

  /** A new secret, in the answer only; the old one signs nothing from now on. */
  async rotateSecret(principal: Principal, id: string): Promise<{ webhook: WebhookRow; secret: string }> {
    if (!isUuid(id)) throw webhookNotFound(id);
    const secret = generateSecret();
    const webhook = await this.repository.transaction(async (manager) => {
      const webhook = await this.repository.findWebhook(principal.organizationId, id, manager, true);
      if (!webhook) throw webhookNotFound(id);
      const next = { ...webhook, secret: this.box.encrypt(secret, id), secretHint: secretHint(secret), updatedAt: new Date() };
      await this.repository.updateWebhook(manager, next);
      this.events.raise(manager, {
        type: 'webhook.updated',
        organizationId: principal.organizationId,
        actor: actingAs(principal).event,
        data: { ...summaryOf(next), changes: ['secret'] },
      });
      return next;
    });
    logSecurityEvent('webhook.secret_rotated', securityActorOf(principal), { webhookId: id });
    return { webhook, secret };
  }

  /** Deletes a webhook and its deliveries: nothing more is sent to it, pending retries included. */
  async delete(principal: Principal, id: string): Promise<WebhookRow> {
    if (!isUuid(id)) throw webhookNotFound(id);
    const deleted = await this.repository.transaction(async (manager) => {
      const webhook = await this.repository.findWebhook(principal.organizationId, id, manager, true);
      if (!webhook) throw webhookNotFound(id);
      await this.repository.deleteWebhook(manager, webhook);
      this.events.raise(manager, {
        type: 'webhook.deleted',
        organizationId: principal.organizationId,
        actor: actingAs(principal).event,
        data: summaryOf(webhook),
      });
      return webhook;
    });
    logSecurityEvent('webhook.deleted', securityActorOf(principal), { webhookId: id });
    return deleted;
  }

  async deliveries(
    principal: Principal,
    webhookId: string,
    status: DeliveryStatus | undefined,
    cursor: string | undefined,
    limit: number,
  ): Promise<Page<DeliveryRow>> {
    const webhook = await this.get(principal, webhookId);
    return this.repository.listDeliveries(webhook, { status }, cursor, limit);
  }

  /** Sends a delivery again now, whatever became of it, with a fresh schedule of retries. */
  async redeliver(principal: Principal, webhookId: string, deliveryId: string): Promise<DeliveryRow> {
    const webhook = await this.get(principal, webhookId);
    const delivery = isUuid(deliveryId) ? await this.repository.findDelivery(webhook, deliveryId) : null;
    if (!delivery) throw deliveryNotFound(webhookId, deliveryId);
    if (!webhook.enabled) {
      throw webhookDisabled(webhookId);
    }
    return (await this.repository.redeliver(webhook, delivery.id)) ?? delivery;
  }

  /**
   * The URL as stored, or a 400: https (http only for a host in WEBHOOK_ALLOWED_HOSTS), no
   * credentials or fragment, and no destination the address rules refuse without a DNS lookup (an IP
   * address that is not public, localhost, a metadata service, this server). A name is resolved, and
   * its addresses checked, at every delivery.
   */
  private checkUrl(principal: Principal, raw: string): string {
    if (raw.length > MAX_URL_LENGTH) throw validationError([{ field: 'url', message: `must be at most ${MAX_URL_LENGTH} characters` }]);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw validationError([{ field: 'url', message: 'must be an absolute https URL' }]);
    }
    const refuse = (reason: string) => {
      logSecurityEvent('webhook.destination_refused', securityActorOf(principal), { host: url.host, reason });
      return new WebhookError(WebhookErrorCode.UrlRefused, `The webhook URL is refused: ${reason}.`, { reason });
    };
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refuse(`${url.protocol} is not https`);
    if (url.username || url.password) throw refuse('it carries credentials (user:password@); put them in the path or query if the receiver needs a token');
    if (url.hash) throw refuse('it has a fragment (#...), which is never sent');
    const reason = this.sender.client.refusalWithoutLookup(url);
    if (reason !== null) throw refuse(reason);
    return url.href;
  }
}

function summaryOf(webhook: WebhookRow): WebhookSummary {
  return { webhookId: webhook.id, origin: new URL(webhook.url).origin, eventTypes: webhook.eventTypes, enabled: webhook.enabled };
}

import { Injectable } from '@nestjs/common';
import type { EventType } from '../../platform/events';
import { DataSource, EntityManager } from 'typeorm';
import { NewestFirst } from '../../platform/database/keyset';
import { Sql } from '../../platform/database/sql';
import { Page, toPage } from '../../platform/http/pagination';

export interface WebhookRow {
  id: string;
  organizationId: string;
  url: string;
  description: string | null;
  eventTypes: EventType[];
  enabled: boolean;
  /** The SecretBox envelope of the signing secret, bound to the webhook's id. */
  secret: string;
  secretHint: string;
  /** It takes the events numbered after this one (the last when it was created)... */
  startsAfterSeq: number;
  /** ...except those of its last pause: after `pausedAfterSeq`, up to `resumedAfterSeq` (null: still paused). */
  pausedAfterSeq: number | null;
  resumedAfterSeq: number | null;
  failingSince: Date | null;
  disabledReason: DisabledReason | null;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';
/** Why the server disabled a webhook; a person's disabling leaves none. */
export type DisabledReason = 'endpoint_failing';

/** One try at sending a delivery, as the delivery log shows it. */
export interface Attempt {
  /** Unix ms when it started. */
  at: number;
  /** The receiver's status code; null when it gave none (refused, unreachable, timed out). */
  statusCode: number | null;
  durationMs: number;
  /** Why it failed; null when it succeeded. */
  error: string | null;
}

export interface DeliveryRow {
  id: string;
  webhookId: string;
  organizationId: string;
  eventId: string;
  eventSeq: number;
  eventType: EventType;
  status: DeliveryStatus;
  retries: number;
  nextAttemptAt: Date | null;
  attempts: Attempt[];
  createdAt: Date;
  deliveredAt: Date | null;
}

/** A delivery claimed for one attempt: what to send, where, and the lease that marks the claim. */
/** A webhook's key: its organization leads it (see the TenantKeys migration), so statements on one webhook name both. */
export type WebhookKey = Pick<WebhookRow, 'organizationId' | 'id'>;

export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  organizationId: string;
  eventId: string;
  eventType: string;
  payload: string;
  retries: number;
  url: string;
  secret: string;
  lease: Date;
}

const WEBHOOK_COLUMNS = `id, organization_id AS "organizationId", url, description, event_types AS "eventTypes", enabled, secret,
  secret_hint AS "secretHint", starts_after_seq AS "startsAfterSeq", paused_after_seq AS "pausedAfterSeq", resumed_after_seq AS "resumedAfterSeq", failing_since AS "failingSince", disabled_reason AS "disabledReason",
  created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt"`;
const DELIVERY_COLUMNS = `id, webhook_id AS "webhookId", organization_id AS "organizationId", event_id AS "eventId", event_seq AS "eventSeq",
  event_type AS "eventType", status, retries, next_attempt_at AS "nextAttemptAt", attempts, created_at AS "createdAt", delivered_at AS "deliveredAt"`;
/** The most attempts a delivery's log keeps (the oldest go first). */
const MAX_LOGGED_ATTEMPTS = 50;

const webhookPages = new NewestFirst('webhooks');
const deliveryPages = new NewestFirst('webhook_deliveries');

/** All SQL of the Webhooks module: named statements through `Sql` (docs/architecture.md, "Data access"). */
@Injectable()
export class WebhooksRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
  ) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  async insertWebhook(manager: EntityManager, row: WebhookRow): Promise<void> {
    await this.sql.in(manager).query(
      'webhooks.insert',
      `INSERT INTO webhooks (id, organization_id, url, description, event_types, enabled, secret, secret_hint, starts_after_seq, paused_after_seq, created_by, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)`,
      [
        row.id,
        row.organizationId,
        row.url,
        row.description,
        JSON.stringify(row.eventTypes),
        row.enabled,
        row.secret,
        row.secretHint,
        row.startsAfterSeq,
        row.pausedAfterSeq,
        row.createdBy,
        row.createdAt,
      ],
    );
  }

  async countWebhooks(manager: EntityManager, organizationId: string): Promise<number> {
    const [row] = await this.sql
      .in(manager)
      .query<{ n: number }>('webhooks.count', `SELECT count(*)::int AS n FROM webhooks WHERE organization_id = $1`, [organizationId]);
    return row.n;
  }

  /** The organization's webhook (`lock`: and holds it until the transaction ends). */
  async findWebhook(organizationId: string, id: string, manager?: EntityManager, lock = false): Promise<WebhookRow | null> {
    const [row] = await this.sql
      .in(manager)
      .query<WebhookRow>(
        `webhooks.find${lock ? '.lock' : ''}`,
        `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE organization_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
        [organizationId, id],
      );
    return row ? toWebhook(row) : null;
  }

  async listWebhooks(organizationId: string, cursor: string | undefined, limit: number): Promise<Page<WebhookRow>> {
    const after = webhookPages.positionOf(cursor);
    const rows = await this.sql.query<WebhookRow>(
      `webhooks.list${after ? '.after' : ''}`,
      `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE organization_id = $1 ${after ? 'AND (created_at, id) < ($3, $4)' : ''}
       ORDER BY created_at DESC, id DESC LIMIT $2`,
      after ? [organizationId, limit + 1, after.createdAt, after.id] : [organizationId, limit + 1],
    );
    return toPage(rows.map(toWebhook), limit, (row) => webhookPages.cursorOf(row));
  }

  /** Writes a webhook's changeable fields as they are in `row`. */
  async updateWebhook(manager: EntityManager, row: WebhookRow): Promise<void> {
    await this.sql.in(manager).query(
      'webhooks.update',
      `UPDATE webhooks SET url = $2, description = $3, event_types = $4, enabled = $5, secret = $6, secret_hint = $7, failing_since = $8,
         disabled_reason = $9, paused_after_seq = $10, resumed_after_seq = $11, updated_at = $12 WHERE organization_id = $13 AND id = $1`,
      [
        row.id,
        row.url,
        row.description,
        JSON.stringify(row.eventTypes),
        row.enabled,
        row.secret,
        row.secretHint,
        row.failingSince,
        row.disabledReason,
        row.pausedAfterSeq,
        row.resumedAfterSeq,
        row.updatedAt,
        row.organizationId,
      ],
    );
  }

  async deleteWebhook(manager: EntityManager, webhook: WebhookKey): Promise<void> {
    await this.sql.in(manager).query('webhooks.delete', `DELETE FROM webhooks WHERE organization_id = $1 AND id = $2`, [webhook.organizationId, webhook.id]);
  }

  /**
   * Queues each event's `payload` for every webhook of the organization that takes its type (an empty
   * list takes all) and was enabled when the event was numbered; none twice. The number queued. One
   * queued while its webhook is paused (it was made before the pause) waits for it to be enabled.
   */
  async queueDeliveries(
    manager: EntityManager,
    organizationId: string,
    events: Array<{ id: string; seq: number; type: string; payload: string }>,
  ): Promise<number> {
    const rows = await this.sql.in(manager).query(
      'webhooks.deliveries.queue',
      `INSERT INTO webhook_deliveries (id, webhook_id, organization_id, event_id, event_seq, event_type, payload, status, next_attempt_at, created_at)
       SELECT gen_random_uuid(), w.id, w.organization_id, e.id, e.seq, e.type, e.payload, 'pending', now(), now()
       FROM unnest($2::uuid[], $3::bigint[], $4::text[], $5::text[]) AS e(id, seq, type, payload)
       JOIN webhooks w ON w.organization_id = $1 AND w.starts_after_seq < e.seq
         AND (w.paused_after_seq IS NULL OR e.seq <= w.paused_after_seq OR e.seq > w.resumed_after_seq)
         AND (w.event_types = '[]'::jsonb OR w.event_types ? e.type)
       ORDER BY e.seq
       ON CONFLICT (webhook_id, event_id, organization_id) DO NOTHING
       RETURNING id`,
      [organizationId, events.map((e) => e.id), events.map((e) => e.seq), events.map((e) => e.type), events.map((e) => e.payload)],
    );
    return rows.length;
  }

  /** When the next pending delivery of an enabled webhook is due (a retry, or a claim whose lease runs out); null: none. */
  async nextDue(): Promise<Date | null> {
    const [row] = await this.sql.query<{ due: Date | null }>(
      'webhooks.deliveries.nextDue',
      `SELECT min(d.next_attempt_at) AS due FROM webhook_deliveries d JOIN webhooks w ON w.organization_id = d.organization_id AND w.id = d.webhook_id
       WHERE d.status = 'pending' AND w.enabled`,
      [],
    );
    return row?.due ? new Date(row.due) : null;
  }

  /**
   * Claims up to `limit` deliveries due, of enabled webhooks, for one attempt each: their next attempt
   * time moves `leaseMs` ahead, so another instance takes one over only if this one dies with it.
   */
  async claimDue(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const rows = await this.sql.query<ClaimedDelivery>(
      'webhooks.deliveries.claim',
      `WITH due AS (
         SELECT d.organization_id, d.id FROM webhook_deliveries d JOIN webhooks w ON w.organization_id = d.organization_id AND w.id = d.webhook_id
         WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND w.enabled
         ORDER BY d.next_attempt_at LIMIT $1
         FOR UPDATE OF d SKIP LOCKED
       )
       UPDATE webhook_deliveries d SET next_attempt_at = now() + make_interval(secs => $2::float8 / 1000)
       FROM due, webhooks w WHERE d.organization_id = due.organization_id AND d.id = due.id AND w.organization_id = d.organization_id AND w.id = d.webhook_id
       RETURNING d.id, d.webhook_id AS "webhookId", d.organization_id AS "organizationId", d.event_id AS "eventId", d.event_type AS "eventType",
         d.payload, d.retries, w.url, w.secret, d.next_attempt_at AS lease`,
      [limit, leaseMs],
    );
    return rows.map((row) => ({ ...row, lease: new Date(row.lease) }));
  }

  /**
   * Records an attempt of a claimed delivery and its outcome, if the claim still holds (a redelivery
   * or another instance may have taken it since). `next`: delivered, failed, or retry at a time.
   */
  async recordAttempt(
    manager: EntityManager,
    claim: Pick<ClaimedDelivery, 'organizationId' | 'id' | 'lease'>,
    attempt: Attempt,
    next: { status: 'delivered' } | { status: 'failed' } | { status: 'pending'; retryInMs: number },
  ): Promise<boolean> {
    const rows = await this.sql.in(manager).query(
      'webhooks.deliveries.recordAttempt',
      `UPDATE webhook_deliveries SET
         status = $3::text,
         retries = retries + CASE WHEN $3::text = 'pending' THEN 1 ELSE 0 END,
         next_attempt_at = CASE WHEN $3::text = 'pending' THEN now() + make_interval(secs => $4::float8 / 1000) END,
         delivered_at = CASE WHEN $3::text = 'delivered' THEN now() ELSE delivered_at END,
         attempts = CASE WHEN jsonb_array_length(attempts) >= ${MAX_LOGGED_ATTEMPTS} THEN (attempts - 0) ELSE attempts END || $5::jsonb
       WHERE organization_id = $6 AND id = $1 AND status = 'pending' AND next_attempt_at = $2
       RETURNING id`,
      [claim.id, claim.lease, next.status, next.status === 'pending' ? next.retryInMs : 0, JSON.stringify([attempt]), claim.organizationId],
    );
    return rows.length > 0;
  }

  /** Marks a webhook failing since `at` unless it already was; its row locked until the transaction ends. */
  async markFailing(manager: EntityManager, webhook: WebhookKey, at: Date): Promise<WebhookRow | null> {
    const [row] = await this.sql
      .in(manager)
      .query<WebhookRow>(
        'webhooks.markFailing',
        `UPDATE webhooks SET failing_since = COALESCE(failing_since, $2) WHERE organization_id = $3 AND id = $1 RETURNING ${WEBHOOK_COLUMNS}`,
        [webhook.id, at, webhook.organizationId],
      );
    return row ? toWebhook(row) : null;
  }

  async markHealthy(manager: EntityManager, webhook: WebhookKey): Promise<void> {
    await this.sql
      .in(manager)
      .query('webhooks.markHealthy', `UPDATE webhooks SET failing_since = NULL WHERE organization_id = $2 AND id = $1 AND failing_since IS NOT NULL`, [
        webhook.id,
        webhook.organizationId,
      ]);
  }

  /** Disables a failing webhook; the events numbered after `lastSeq` are not queued for it. */
  async disableFailing(manager: EntityManager, webhook: WebhookKey, lastSeq: number, now: Date): Promise<void> {
    await this.sql.in(manager).query(
      'webhooks.disableFailing',
      `UPDATE webhooks SET enabled = false, disabled_reason = 'endpoint_failing', paused_after_seq = $2, resumed_after_seq = NULL, updated_at = $3
         WHERE organization_id = $4 AND id = $1`,
      [webhook.id, lastSeq, now, webhook.organizationId],
    );
  }

  async listDeliveries(webhook: WebhookKey, filter: { status?: DeliveryStatus }, cursor: string | undefined, limit: number): Promise<Page<DeliveryRow>> {
    const after = deliveryPages.positionOf(cursor);
    const where = ['webhook_id = $1', 'organization_id = $3'];
    const values: unknown[] = [webhook.id, limit + 1, webhook.organizationId];
    if (filter.status) {
      values.push(filter.status);
      where.push(`status = $${values.length}`);
    }
    if (after) {
      values.push(after.createdAt, after.id);
      where.push(`(created_at, id) < ($${values.length - 1}, $${values.length})`);
    }
    const rows = await this.sql.query<DeliveryRow>(
      `webhooks.deliveries.list${filter.status ? '.status' : ''}${after ? '.after' : ''}`,
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $2`,
      values,
    );
    return toPage(rows.map(toDelivery), limit, (row) => deliveryPages.cursorOf(row));
  }

  async findDelivery(webhook: WebhookKey, id: string): Promise<DeliveryRow | null> {
    const [row] = await this.sql.query<DeliveryRow>(
      'webhooks.deliveries.find',
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE organization_id = $3 AND id = $2 AND webhook_id = $1`,
      [webhook.id, id, webhook.organizationId],
    );
    return row ? toDelivery(row) : null;
  }

  /** Queues a delivery again now, with its retries counted afresh; its log of attempts stays. */
  async redeliver(webhook: WebhookKey, id: string): Promise<DeliveryRow | null> {
    const [row] = await this.sql.query<DeliveryRow>(
      'webhooks.deliveries.redeliver',
      `UPDATE webhook_deliveries SET status = 'pending', retries = 0, next_attempt_at = now(), delivered_at = NULL
       WHERE organization_id = $3 AND id = $2 AND webhook_id = $1 RETURNING ${DELIVERY_COLUMNS}`,
      [webhook.id, id, webhook.organizationId],
    );
    return row ? toDelivery(row) : null;
  }

  /** Forgets finished deliveries created before `before`, a batch at a time. */
  async forgetFinished(before: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const rows = await this.sql.query(
        'webhooks.deliveries.forgetFinished',
        `DELETE FROM webhook_deliveries WHERE (organization_id, id) IN (
           SELECT organization_id, id FROM webhook_deliveries WHERE created_at < $1 AND status <> 'pending' LIMIT 5000) RETURNING 1`,
        [before],
      );
      total += rows.length;
      if (rows.length < 5000) return total;
    }
  }
}

function toWebhook(row: WebhookRow): WebhookRow {
  return {
    ...row,
    startsAfterSeq: Number(row.startsAfterSeq),
    pausedAfterSeq: row.pausedAfterSeq === null ? null : Number(row.pausedAfterSeq),
    resumedAfterSeq: row.resumedAfterSeq === null ? null : Number(row.resumedAfterSeq),
    failingSince: row.failingSince === null ? null : new Date(row.failingSince),
    createdAt: new Date(row.createdAt),
    updatedAt: new Date(row.updatedAt),
  };
}

function toDelivery(row: DeliveryRow): DeliveryRow {
  return {
    ...row,
    eventSeq: Number(row.eventSeq),
    nextAttemptAt: row.nextAttemptAt === null ? null : new Date(row.nextAttemptAt),
    createdAt: new Date(row.createdAt),
    deliveredAt: row.deliveredAt === null ? null : new Date(row.deliveredAt),
  };
}

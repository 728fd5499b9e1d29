import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Interval } from '@nestjs/schedule';
import { DataSource, EntityManager, EntitySubscriberInterface, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { PgListener } from '../database/pg-listener';
import { newId } from '../database/ids';
import { currentRequest } from '../http/request-context';
import { AnyStoredEvent, EventType, NewEvent, StoredEvent } from './event';

/** The PostgreSQL channel on which instances tell each other that an organization's log grew. */
export const EVENTS_CHANNEL = 'agent_platform_events';

interface EventRow {
  organization_id: string;
  seq: string;
  id: string;
  type: EventType;
  occurred_at: Date;
  session_id: string | null;
  actor: StoredEvent['actor'];
  data: StoredEvent['data'];
}

export interface EventQuery {
  /** Events after this sequence number (0: from the oldest kept). */
  after: number;
  /** Only events before this sequence number. */
  before?: number;
  /** Newest first (default: oldest first). */
  newestFirst?: boolean;
  limit: number;
  sessionId?: string;
  types?: readonly string[];
  /** Only events that occurred in [since, until). */
  since?: Date;
  until?: Date;
  /** Only events of this actor (a user id). */
  actorUserId?: string;
}

interface Pending {
  raised: Array<NewEvent & { id: string; occurredAt: Date }>;
  stored: AnyStoredEvent[];
}

const COLUMNS = 'organization_id, seq, id, type, occurred_at, session_id, actor, data';

/**
 * The event log, a transactional outbox. A command raises its events inside its transaction
 * (`raise`); they are numbered and written just before it commits, so the rows, the idempotency
 * record and the events commit or vanish together, and an organization's numbers follow commit
 * order with no gap (the organization's `event_sequences` row is locked from the write to the
 * commit). After the commit they are emitted to this instance's listeners (`@OnDomainEvent`) and
 * announced to the other instances (`NOTIFY`), which read them from the log and emit them to
 * theirs. Listeners whose effect must not be lost are durable (see DurableListeners): they read the
 * log themselves from a checkpoint, so a crash between commit and emit loses nothing.
 */
@Injectable()
export class EventLog implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(EventLog.name);
  private readonly pending = new WeakMap<QueryRunner, Pending>();
  /** Tells this instance's own announcements apart: it emitted those events itself. */
  private readonly instanceId = randomUUID();
  private listener: PgListener | null = null;
  private readonly unsent: string[] = [];
  private sending = false;
  /** `appended` (organizationId, lastSeq): the organization's log grew, here or on another instance. */
  readonly growth = new EventEmitter().setMaxListeners(0);

  constructor(
    private readonly dataSource: DataSource,
    private readonly emitter: EventEmitter2,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.dataSource.subscribers.push(this.transactionHooks());
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.engine !== 'postgres') return;
    this.listener = new PgListener(this.dataSource, EVENTS_CHANNEL, {
      onNotify: (payload) => void this.onAnnouncement(payload),
      // Announcements sent meanwhile were lost: whoever follows the log looks again.
      onResumed: () => this.growth.emit('resumed'),
    });
    await this.listener.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.listener?.close();
    this.listener = null;
  }

  /**
   * Raises events in the transaction `manager` runs: they are stored if and when it commits. The
   * actor gets the client's address and the request id when raised while serving a request.
   */
  raise(manager: EntityManager, ...events: NewEvent[]): void {
    const runner = manager.queryRunner;
    if (!runner?.isTransactionActive) throw new Error('Events are raised inside the transaction that makes them true');
    const request = currentRequest();
    let pending = this.pending.get(runner);
    if (!pending) {
      pending = { raised: [], stored: [] };
      this.pending.set(runner, pending);
    }
    const occurredAt = new Date();
    for (const event of events) {
      const actor = event.actor && request ? { ...event.actor, ip: request.ip, requestId: request.requestId } : (event.actor ?? null);
      pending.raised.push({ ...event, actor, id: newId(), occurredAt: event.occurredAt ?? occurredAt });
    }
  }

  /** The organization's events after `query.after` (and before `query.before`), oldest first unless `newestFirst`. */
  async read(organizationId: string, query: EventQuery): Promise<AnyStoredEvent[]> {
    const where = ['organization_id = $1', 'seq > $2'];
    const values: unknown[] = [organizationId, query.after];
    const add = (clause: string, value: unknown) => {
      values.push(value);
      where.push(clause.replace('?', `$${values.length}`));
    };
    if (query.before !== undefined) add('seq < ?', query.before);
    if (query.sessionId) add('session_id = ?', query.sessionId);
    if (query.types?.length) add('type = ANY(?)', query.types);
    if (query.since) add('occurred_at >= ?', query.since);
    if (query.until) add('occurred_at < ?', query.until);
    if (query.actorUserId) add(`actor->>'userId' = ?`, query.actorUserId);
    values.push(query.limit);
    const rows = (await this.dataSource.query(
      `SELECT ${COLUMNS} FROM events WHERE ${where.join(' AND ')} ORDER BY seq${query.newestFirst ? ' DESC' : ''} LIMIT $${values.length}`,
      values,
    )) as EventRow[];
    return rows.map(toStoredEvent);
  }

  /** The organization's next `limit` events after `after`, in the caller's transaction. */
  async readIn(manager: EntityManager, organizationId: string, after: number, limit: number): Promise<AnyStoredEvent[]> {
    const rows = (await manager.query(`SELECT ${COLUMNS} FROM events WHERE organization_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [
      organizationId,
      after,
      limit,
    ])) as EventRow[];
    return rows.map(toStoredEvent);
  }

  /** The oldest kept and the last sequence numbers of the organization (0 and 0 before its first event). */
  async bounds(organizationId: string): Promise<{ oldest: number; last: number }> {
    const [row] = (await this.dataSource.query(
      `SELECT (SELECT last_seq FROM event_sequences WHERE organization_id = $1) AS last,
              (SELECT min(seq) FROM events WHERE organization_id = $1) AS oldest`,
      [organizationId],
    )) as Array<{ last: string | null; oldest: string | null }>;
    const last = Number(row?.last ?? 0);
    return { oldest: row?.oldest === null || row?.oldest === undefined ? last + 1 : Number(row.oldest), last };
  }

  /** Forgets events older than EVENT_RETENTION_DAYS, a batch at a time. Safe on every instance at once. */
  @Interval(10 * 60 * 1000)
  async forgetExpired(now = new Date()): Promise<number> {
    const before = new Date(now.getTime() - this.config.EVENT_RETENTION_DAYS * 86_400_000);
    let total = 0;
    for (;;) {
      const result = (await this.dataSource.query(
        `DELETE FROM events WHERE ctid IN (SELECT ctid FROM events WHERE occurred_at < $1 LIMIT 5000)`,
        [before],
      )) as [unknown, number];
      total += result[1];
      if (result[1] < 5000) break;
    }
    if (total > 0) this.logger.log({ deleted: total }, 'Forgot events past EVENT_RETENTION_DAYS');
    return total;
  }

  /** Writes a transaction's events, numbered, just before it commits. */
  private async flush(runner: QueryRunner): Promise<void> {
    const pending = this.pending.get(runner);
    if (!pending || pending.raised.length === 0) return;
    const byOrganization = new Map<string, Pending['raised']>();
    for (const event of pending.raised) {
      const list = byOrganization.get(event.organizationId) ?? [];
      list.push(event);
      byOrganization.set(event.organizationId, list);
    }
    pending.raised = [];
    for (const [organizationId, events] of byOrganization) {
      const payload = events.map((event) => ({
        id: event.id,
        type: event.type,
        occurred_at: event.occurredAt.toISOString(),
        session_id: event.sessionId ?? null,
        actor: event.actor ?? null,
        data: event.data,
      }));
      const rows = (await runner.query(
        `WITH numbered AS (
           INSERT INTO event_sequences (organization_id, last_seq) VALUES ($1, $2)
           ON CONFLICT (organization_id) DO UPDATE SET last_seq = event_sequences.last_seq + $2
           RETURNING last_seq
         )
         INSERT INTO events (${COLUMNS})
         SELECT $1, numbered.last_seq - $2 + e.n, (e.event->>'id')::uuid, e.event->>'type', (e.event->>'occurred_at')::timestamptz,
                (e.event->>'session_id')::uuid, e.event->'actor', e.event->'data'
         FROM numbered, jsonb_array_elements($3::jsonb) WITH ORDINALITY AS e(event, n)
         RETURNING seq, id`,
        [organizationId, events.length, JSON.stringify(payload)],
      )) as Array<{ seq: string; id: string }>;
      const seqs = new Map(rows.map((row) => [row.id, Number(row.seq)]));
      for (const event of events) {
        pending.stored.push({
          id: event.id,
          seq: seqs.get(event.id)!,
          type: event.type,
          organizationId,
          sessionId: event.sessionId ?? null,
          actor: event.actor ?? null,
          occurredAt: event.occurredAt,
          data: event.data,
        } as AnyStoredEvent);
      }
    }
  }

  /** After the commit: this instance's listeners, and the other instances. */
  private dispatch(runner: QueryRunner): void {
    const pending = this.pending.get(runner);
    this.pending.delete(runner);
    if (!pending || pending.stored.length === 0) return;
    const stored = pending.stored.sort((a, b) => a.seq - b.seq);
    this.emitLocally(stored);
    if (!this.listener) return;
    const ranges = new Map<string, { from: number; to: number }>();
    for (const event of stored) {
      const range = ranges.get(event.organizationId);
      if (!range) ranges.set(event.organizationId, { from: event.seq, to: event.seq });
      else range.to = Math.max(range.to, event.seq);
    }
    for (const [organizationId, { from, to }] of ranges) this.unsent.push(JSON.stringify({ i: this.instanceId, o: organizationId, f: from, t: to }));
    if (!this.sending) void this.sendAnnouncements();
  }

  private emitLocally(events: AnyStoredEvent[]): void {
    const last = new Map<string, number>();
    for (const event of events) {
      this.emitter.emit(event.type, event);
      last.set(event.organizationId, Math.max(last.get(event.organizationId) ?? 0, event.seq));
    }
    for (const [organizationId, seq] of last) this.growth.emit('appended', organizationId, seq);
  }

  /** One statement carries every announcement made meanwhile: under load a NOTIFY costs one round trip, not one per commit. */
  private async sendAnnouncements(): Promise<void> {
    this.sending = true;
    try {
      while (this.unsent.length > 0 && this.listener) {
        const payloads = this.unsent.splice(0);
        await this.listener.notify(payloads).catch((error: Error) => {
          // The other instances find the events at their next sweep or resume.
          this.logger.warn(`Could not announce events to other instances: ${error.message}`);
        });
      }
    } finally {
      this.sending = false;
    }
  }

  private async onAnnouncement(payload: string): Promise<void> {
    let note: { i?: unknown; o?: unknown; f?: unknown; t?: unknown };
    try {
      note = JSON.parse(payload) as typeof note;
    } catch {
      return;
    }
    if (note.i === this.instanceId || typeof note.o !== 'string' || typeof note.f !== 'number' || typeof note.t !== 'number') return;
    try {
      const rows = (await this.dataSource.query(`SELECT ${COLUMNS} FROM events WHERE organization_id = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq`, [
        note.o,
        note.f,
        note.t,
      ])) as EventRow[];
      this.emitLocally(rows.map(toStoredEvent));
    } catch (error) {
      this.logger.warn(`Could not read events announced by another instance: ${(error as Error).message}`);
    }
  }

  private transactionHooks(): EntitySubscriberInterface {
    // Nested transactions (savepoints) commit with their parent: only the outermost counts.
    const outermost = (runner: QueryRunner) => (runner as unknown as { transactionDepth: number }).transactionDepth === 1;
    return {
      beforeTransactionCommit: async (event: TransactionCommitEvent) => {
        if (outermost(event.queryRunner)) await this.flush(event.queryRunner);
      },
      afterTransactionCommit: (event: TransactionCommitEvent) => {
        if (!event.queryRunner.isTransactionActive) this.dispatch(event.queryRunner);
      },
      afterTransactionRollback: (event: TransactionRollbackEvent) => {
        if (!event.queryRunner.isTransactionActive) this.pending.delete(event.queryRunner);
      },
    };
  }
}

function toStoredEvent(row: EventRow): AnyStoredEvent {
  return {
    id: row.id,
    seq: Number(row.seq),
    type: row.type,
    organizationId: row.organization_id,
    sessionId: row.session_id,
    actor: row.actor,
    occurredAt: new Date(row.occurred_at),
    data: row.data,
  } as AnyStoredEvent;
}

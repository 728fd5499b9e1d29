import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import type { PoolClient, QueryResult } from 'pg';
import { DataSource, EntityManager, EntitySubscriberInterface, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { AdvisoryLock } from '../database/advisory-locks';
import { PgListener } from '../database/pg-listener';
import { newId } from '../database/ids';
import { Params, Sql } from '../database/sql';
import { currentRequest } from '../http/request-context';
import { JobRunner } from '../jobs';
import { AnyStatementEvent, AnyStoredEvent, EventActor, EventType, NewEvent, StoredEvent } from './event';

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
  /** Whether the transaction wrote events, to be numbered once it has committed. */
  written: boolean;
}

/** The most events one sequencer run numbers. */
const SEQUENCE_BATCH = 5_000;
/** How often expired events are forgotten. */
const FORGET_EVERY_MS = 10 * 60_000;

const COLUMNS = 'organization_id, seq, id, type, occurred_at, session_id, actor, data';

/**
 * One sequencer run, in one round trip: the lock, then the numbering in a statement of its own (its
 * snapshot taken once the lock is held, so it sees what every run before it did), then the commit.
 * The oldest events waiting are numbered per organization in the order they were written, and the
 * organizations' counters move on. `announceAs` (an instance id): the other instances are told
 * which numbers each organization got, with the commit (NOTIFY).
 */
function sequenceSql(announceAs: string | null): string {
  const announce = announceAs
    ? `, announced AS (
         SELECT pg_notify('${EVENTS_CHANNEL}', json_build_object('i', '${announceAs}', 'o', organization_id, 'f', min(seq), 't', max(seq))::text)
         FROM numbered GROUP BY organization_id
       )`
    : '';
  return `BEGIN;
SELECT pg_advisory_xact_lock(${AdvisoryLock.EventSequencer});
WITH waiting AS (
  SELECT organization_id, position, row_number() OVER (PARTITION BY organization_id ORDER BY position) AS n
  FROM (SELECT organization_id, position FROM events WHERE seq IS NULL ORDER BY position LIMIT ${SEQUENCE_BATCH}) AS oldest
), counts AS (
  SELECT organization_id, count(*) AS c FROM waiting GROUP BY organization_id
), counters AS (
  INSERT INTO event_sequences AS s (organization_id, last_seq) SELECT organization_id, c FROM counts
  ON CONFLICT (organization_id) DO UPDATE SET last_seq = s.last_seq + EXCLUDED.last_seq
  RETURNING s.organization_id, s.last_seq
), numbered AS (
  UPDATE events e SET seq = counters.last_seq - counts.c + waiting.n
  FROM waiting JOIN counts USING (organization_id) JOIN counters USING (organization_id)
  WHERE e.organization_id = waiting.organization_id AND e.position = waiting.position
  RETURNING ${COLUMNS.split(', ')
    .map((column) => `e.${column}`)
    .join(', ')}
)${announce}
SELECT ${COLUMNS}${announceAs ? ', (SELECT count(*) FROM announced) AS announced' : ''} FROM numbered;
COMMIT`;
}

/**
 * The event log, a transactional outbox. A command raises its events inside its transaction
 * (`raise`); they are written just before it commits, so the rows, the idempotency record and the
 * events commit or vanish together: a write is that one transaction, and the command answers once
 * it has committed. Then, in the background, the sequencer numbers them per organization (1, 2,
 * 3... with no gap), one run at a time for every command committed meanwhile (a burst of commits is
 * numbered in one run), emits them to this instance's listeners (`@OnDomainEvent`) and announces them
 * to the other instances (`NOTIFY`), which read them from the log and emit them to theirs. A client
 * reading the log (`settle`) first has what was committed numbered, so it finds its own writes'
 * events on any instance. Listeners whose effect must not be lost are durable (see
 * DurableListeners): they read the log themselves from a checkpoint, so a crash between commit and
 * emit loses nothing; their sweep also numbers events a crash left unnumbered. An effect the
 * caller must see in the answer (a cache of its own dropped) is the command's, not a listener's.
 */
@Injectable()
export class EventLog implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(EventLog.name);
  private readonly pending = new WeakMap<QueryRunner, Pending>();
  /** Tells this instance's own announcements apart: it emitted those events itself. */
  private readonly instanceId = randomUUID();
  /** A run of the sequencer; on PostgreSQL it announces what it numbered to the other instances. */
  private readonly sequenceSql: string;
  private listener: PgListener | null = null;
  /** This instance's sequencer run under way, and the one asked for meanwhile. */
  private running: Promise<void> | null = null;
  private next: Promise<void> | null = null;
  /** `appended` (organizationId, lastSeq): the organization's log grew, here or on another instance. */
  readonly growth = new EventEmitter().setMaxListeners(0);

  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
    private readonly emitter: EventEmitter2,
    private readonly config: AppConfig,
    private readonly jobs: JobRunner,
  ) {
    this.sequenceSql = sequenceSql(config.engine === 'postgres' ? this.instanceId : null);
  }

  onModuleInit(): void {
    this.dataSource.subscribers.push(this.transactionHooks());
    this.jobs.register({ name: 'events.forget-expired', everyMs: FORGET_EVERY_MS, run: () => this.forgetExpired() });
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
    await (this.next ?? this.running);
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
    const pending = this.pendingOf(runner);
    const occurredAt = new Date();
    for (const event of events) {
      pending.raised.push({ ...event, actor: withRequest(event.actor), id: newId(), occurredAt: event.occurredAt ?? occurredAt });
    }
  }

  /**
   * For a command that is one statement, so that it needs no transaction: the part of its `WITH`
   * that writes its events (`events_written AS (...)`), its values added to the statement's `params`.
   * Each event is selected from the statement's own rows (no row, no event). Call `written` once the
   * statement has run.
   */
  statementEvents(params: Params, actor: EventActor | null, ...events: AnyStatementEvent[]): string {
    const actorParam = params.add(JSON.stringify(withRequest(actor)), 'jsonb');
    const selects = events.map((event) => {
      const data = Object.entries(event.data as Record<string, string>).map(([field, sql]) => `'${field}', ${sql}`);
      return `SELECT ${event.organizationId}, ${params.add(newId(), 'uuid')}, '${event.type}', ${event.occurredAt ?? 'clock_timestamp()'}, ${event.sessionId ?? 'NULL'}::uuid, ${actorParam}, jsonb_build_object(${data.join(', ')}) FROM ${event.from}`;
    });
    return `events_written AS (INSERT INTO events (organization_id, id, type, occurred_at, session_id, actor, data) ${selects.join(' UNION ALL ')})`;
  }

  /** After a statement that wrote events (see `statementEvents`): they are numbered once its transaction has committed (now, when it had none). */
  written(manager: EntityManager): void {
    const runner = manager.queryRunner;
    if (runner?.isTransactionActive) this.pendingOf(runner).written = true;
    else void this.numberPending();
  }

  /**
   * Before a client reads the organization's log: numbers the events committed and not yet numbered (on
   * any instance), so the read finds every event committed before it began, its own writes' included.
   * Costs one index probe when nothing waits. Never inside a transaction (the sequencer needs a connection).
   */
  async settle(organizationId: string): Promise<void> {
    const [waiting] = await this.sql.query<{ waiting: boolean }>(
      'events.waiting',
      'SELECT EXISTS (SELECT 1 FROM events WHERE organization_id = $1 AND seq IS NULL) AS waiting',
      [organizationId],
    );
    if (waiting?.waiting) await this.numberPending();
  }

  private pendingOf(runner: QueryRunner): Pending {
    let pending = this.pending.get(runner);
    if (!pending) {
      pending = { raised: [], written: false };
      this.pending.set(runner, pending);
    }
    return pending;
  }

  /**
   * The organization's events after `query.after` (and before `query.before`), oldest first unless
   * `newestFirst`; settled first, so every event committed before the call is there.
   */
  async read(organizationId: string, query: EventQuery): Promise<AnyStoredEvent[]> {
    await this.settle(organizationId);
    const where = ['organization_id = $1', 'seq > $2'];
    const values: unknown[] = [organizationId, query.after];
    // The statement's name says which filters it has (a prepared statement stands for one text; names stay short).
    let shape = '';
    const add = (flag: string, clause: string, value: unknown) => {
      values.push(value);
      where.push(clause.replace('?', `$${values.length}`));
      shape += flag;
    };
    if (query.before !== undefined) add('b', 'seq < ?', query.before);
    if (query.sessionId) add('s', 'session_id = ?', query.sessionId);
    if (query.types?.length) add('t', 'type = ANY(?)', query.types);
    if (query.since) add('f', 'occurred_at >= ?', query.since);
    if (query.until) add('u', 'occurred_at < ?', query.until);
    if (query.actorUserId) add('a', `actor->>'userId' = ?`, query.actorUserId);
    values.push(query.limit);
    const rows = await this.sql.query<EventRow>(
      `events.read.${shape}${query.newestFirst ? '.newest' : ''}`,
      `SELECT ${COLUMNS} FROM events WHERE ${where.join(' AND ')} ORDER BY seq${query.newestFirst ? ' DESC' : ''} LIMIT $${values.length}`,
      values,
    );
    return rows.map(toStoredEvent);
  }

  /** The organization's next `limit` events after `after`, in the caller's transaction. */
  async readIn(manager: EntityManager, organizationId: string, after: number, limit: number): Promise<AnyStoredEvent[]> {
    const rows = await this.sql
      .in(manager)
      .query<EventRow>('events.readIn', `SELECT ${COLUMNS} FROM events WHERE organization_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [
        organizationId,
        after,
        limit,
      ]);
    return rows.map(toStoredEvent);
  }

  /**
   * The oldest kept and the last sequence numbers of the organization (0 and 0 before its first event).
   * Outside a transaction, settled first: the last counts every event committed before the call.
   */
  async bounds(organizationId: string, manager?: EntityManager): Promise<{ oldest: number; last: number }> {
    if (!manager) await this.settle(organizationId);
    const [row] = await this.sql.in(manager).query<{ last: string | null; oldest: string | null }>(
      'events.bounds',
      `SELECT (SELECT last_seq FROM event_sequences WHERE organization_id = $1) AS last,
              (SELECT min(seq) FROM events WHERE organization_id = $1 AND seq IS NOT NULL) AS oldest`,
      [organizationId],
    );
    const last = Number(row?.last ?? 0);
    return { oldest: row?.oldest === null || row?.oldest === undefined ? last + 1 : Number(row.oldest), last };
  }

  /**
   * Forgets events older than EVENT_RETENTION_DAYS, a batch at a time (the `events.forget-expired` job). Safe on every
   * instance at once. `occurred_at` has no index (each event would pay for it twice, see NumberedEventIndexes): each
   * organization's events are walked oldest first by `position`, which follows the time they were written, and the
   * walk stops at the first one kept.
   */
  async forgetExpired(now = new Date()): Promise<number> {
    const before = new Date(now.getTime() - this.config.EVENT_RETENTION_DAYS * 86_400_000);
    const expiring = await this.sql.query<{ organization_id: string }>(
      'events.expiring',
      `SELECT s.organization_id FROM event_sequences s
       WHERE (SELECT occurred_at FROM events e WHERE e.organization_id = s.organization_id AND e.seq IS NOT NULL ORDER BY e.position LIMIT 1) < $1`,
      [before],
    );
    let total = 0;
    for (const { organization_id: organizationId } of expiring) {
      for (;;) {
        // Materialized, so the batch is chosen once (as an IN subquery it could be run again per row).
        const [{ deleted }] = await this.sql.query<{ deleted: number }>(
          'events.forgetExpired',
          `WITH oldest AS MATERIALIZED (
             SELECT position, occurred_at FROM events WHERE organization_id = $1 AND seq IS NOT NULL ORDER BY position LIMIT 5000
           ), batch AS (
             SELECT position FROM oldest WHERE position < COALESCE((SELECT min(position) FROM oldest WHERE occurred_at >= $2), 9223372036854775807)
           ), gone AS (
             DELETE FROM events e USING batch WHERE e.organization_id = $1 AND e.position = batch.position RETURNING 1
           )
           SELECT count(*)::int AS deleted FROM gone`,
          [organizationId, before],
        );
        total += deleted;
        if (deleted < 5000) break;
      }
    }
    if (total > 0) this.logger.log({ deleted: total }, 'Forgot events past EVENT_RETENTION_DAYS');
    return total;
  }

  /** Writes a transaction's events just before it commits; the sequencer numbers them after. */
  private async flush(runner: QueryRunner): Promise<void> {
    const pending = this.pending.get(runner);
    if (!pending || pending.raised.length === 0) return;
    const payload = pending.raised.map((event) => ({
      organization_id: event.organizationId,
      id: event.id,
      type: event.type,
      occurred_at: event.occurredAt.toISOString(),
      session_id: event.sessionId ?? null,
      actor: event.actor ?? null,
      data: event.data,
    }));
    pending.raised = [];
    pending.written = true;
    await this.sql.in(runner.manager).query(
      'events.flush',
      `INSERT INTO events (organization_id, id, type, occurred_at, session_id, actor, data)
       SELECT (e->>'organization_id')::uuid, (e->>'id')::uuid, e->>'type', (e->>'occurred_at')::timestamptz, (e->>'session_id')::uuid, e->'actor', e->'data'
       FROM jsonb_array_elements($1::jsonb) AS e`,
      [JSON.stringify(payload)],
    );
  }

  /**
   * Starts a sequencer run, or, when one is under way (it may have looked before the caller's
   * commit), one right after it, shared by everyone who asked meanwhile: a burst of commits is
   * numbered in one run. Resolves when that run has ended; never rejects (what a failed run left is
   * numbered by the next one, or by the sweep).
   */
  numberPending(): Promise<void> {
    if (!this.running) {
      this.running = this.runSequencer().finally(() => {
        this.running = null;
      });
      return this.running;
    }
    this.next ??= this.running.then(() => {
      this.next = null;
      return this.numberPending();
    });
    return this.next;
  }

  private async runSequencer(): Promise<void> {
    const runner = this.dataSource.createQueryRunner();
    try {
      while ((await this.sequence(runner)) === SEQUENCE_BATCH);
    } catch (error) {
      this.logger.warn(`Could not number committed events yet: ${(error as Error).message}`);
    } finally {
      await runner.release();
    }
  }

  /**
   * Numbers committed events in the order they were written, per organization, in one transaction
   * (one run at a time across instances, under an advisory lock: numbers never go back and never
   * skip), then emits them here and announces them to the other instances. Returns how many.
   */
  private async sequence(runner: QueryRunner): Promise<number> {
    // One round trip: the lock, then the numbering in a statement of its own (its snapshot taken
    // once the lock is held, so it sees every run before it), then the commit.
    const client = (await runner.connect()) as PoolClient;
    let results: Array<QueryResult<EventRow>>;
    try {
      results = (await client.query(this.sequenceSql)) as unknown as Array<QueryResult<EventRow>>;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
    const rows = results[2].rows;
    if (rows.length > 0) this.emitLocally(rows.map(toStoredEvent).sort((a, b) => a.organizationId.localeCompare(b.organizationId) || a.seq - b.seq));
    return rows.length;
  }

  private emitLocally(events: AnyStoredEvent[]): void {
    const last = new Map<string, number>();
    for (const event of events) {
      this.emitter.emit(event.type, event);
      last.set(event.organizationId, Math.max(last.get(event.organizationId) ?? 0, event.seq));
    }
    for (const [organizationId, seq] of last) this.growth.emit('appended', organizationId, seq);
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
      const rows = await this.sql.query<EventRow>(
        'events.announced',
        `SELECT ${COLUMNS} FROM events WHERE organization_id = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq`,
        [note.o, note.f, note.t],
      );
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
        const runner = event.queryRunner;
        if (runner.isTransactionActive) return;
        const pending = this.pending.get(runner);
        this.pending.delete(runner);
        // Numbered in the background: the answer does not wait (a reader of the log settles first).
        if (pending?.written) void this.numberPending();
      },
      afterTransactionRollback: (event: TransactionRollbackEvent) => {
        if (!event.queryRunner.isTransactionActive) this.pending.delete(event.queryRunner);
      },
    };
  }
}

/** The actor, with the client's address and the request's id when serving a request. */
function withRequest(actor: EventActor | null | undefined): EventActor | null {
  const request = currentRequest();
  return actor && request ? { ...actor, ip: request.ip, requestId: request.requestId } : (actor ?? null);
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

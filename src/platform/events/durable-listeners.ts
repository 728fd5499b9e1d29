import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { isDatabaseUnavailable } from '../database/database-unavailable';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { Sql } from '../database/sql';
import { JobHandle, JobRunner } from '../jobs';
import { Metrics } from '../metrics';
import { AnyStoredEvent, EventType } from './event';
import { EventLog } from './event-log';

/** A listener whose effect must not be lost: it reads the log from its checkpoint, at least once. */
export interface DurableListener {
  /** Stable: the checkpoint is kept under it. */
  name: string;
  /** The types it handles; it still moves past the others. */
  types: readonly EventType[];
  /**
   * Handles a batch of its events (one organization's, in log order) inside the transaction that
   * moves the checkpoint past them, so an effect in the database happens exactly once; a batch is
   * handled with a few statements, not a few per event. An effect outside (a webhook call) must be
   * idempotent, or be recorded here and carried out by a job of its own.
   */
  handle(manager: EntityManager, events: AnyStoredEvent[]): Promise<void>;
  /** After a batch it handled has committed: work that must see the batch's effect committed (waking a job that sends them). */
  afterCommit?(organizationId: string): void;
}

const BATCH = 200;
/**
 * How long after a commit the listeners start on it: a burst of commits is handled in one batch,
 * and the requests the commit woke (a long poll taking the new work) go first (on PGlite, one connection).
 */
const SETTLE_MS = 50;
const MAX_BACKOFF_MS = 5 * 60_000;

/**
 * Runs the durable listeners. Each keeps a checkpoint per organization; an instance works on an
 * (listener, organization) pair only while it holds that checkpoint row's lock (`SKIP LOCKED`), so
 * however many instances run, each event's effect happens once. New events are handled as soon
 * as they are committed (on any instance); a sweep every EVENT_LISTENER_SWEEP_MS finds what was
 * missed (a crash between commit and emit, a lost notification) and retries failures with backoff.
 */
@Injectable()
export class DurableListeners implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(DurableListeners.name);
  private readonly listeners = new Map<string, DurableListener>();
  /** `listener|organization` pairs to look at, and whether a run is under way. */
  private readonly due = new Set<string>();
  private running: Promise<void> | null = null;
  /** The sweep, as the `events.listeners-sweep` job. */
  private readonly sweeper: JobHandle<void>;
  private settling: NodeJS.Timeout | null = null;
  private closing = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
    private readonly log: EventLog,
    config: AppConfig,
    jobs: JobRunner,
    metrics: Metrics,
  ) {
    this.sweeper = jobs.register({ name: 'events.listeners-sweep', everyMs: config.EVENT_LISTENER_SWEEP_MS, runAtStart: true, run: () => this.sweep() });
    metrics.gauge({
      name: 'event_listener_lag_events',
      help: 'Events (all organizations) each durable listener has yet to handle: webhooks queued, analytics facts, audit (all instances).',
      labelNames: ['listener'] as const,
      read: async () => (await this.behind()).map((row) => ({ labels: { listener: row.name }, value: row.behind })),
    });
  }

  /** How many numbered events each listener has not handled yet, all organizations together. */
  private async behind(): Promise<Array<{ name: string; behind: number }>> {
    if (this.listeners.size === 0) return [];
    return this.sql.query<{ name: string; behind: number }>(
      'listeners.behind',
      `SELECT l.name, COALESCE(sum(s.last_seq - COALESCE(c.seq, 0)), 0)::float8 AS behind
       FROM unnest($1::text[]) AS l(name) CROSS JOIN event_sequences s
       LEFT JOIN event_checkpoints c ON c.listener = l.name AND c.organization_id = s.organization_id
       GROUP BY l.name`,
      [[...this.listeners.keys()]],
    );
  }

  /** Registers a listener; call from a module's onModuleInit. */
  register(listener: DurableListener): void {
    if (this.listeners.has(listener.name)) throw new Error(`Two durable listeners are named ${listener.name}`);
    this.listeners.set(listener.name, listener);
  }

  /** The registered listeners' names and types (the architecture guide lists them). */
  registered(): Array<{ name: string; types: readonly EventType[] }> {
    return [...this.listeners.values()].map(({ name, types }) => ({ name, types }));
  }

  onApplicationBootstrap(): void {
    this.log.growth.on('appended', (organizationId: string) => this.poke(organizationId));
    this.log.growth.on('resumed', () => void this.sweeper.runNow());
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    await this.sweeper.stop();
    if (this.settling) clearTimeout(this.settling);
    await this.running;
  }

  /** Runs until every listener has caught up with what is due now (tests and the CLI use it). */
  async drain(): Promise<void> {
    await this.sweeper.runNow();
    while (this.running) await this.running;
  }

  /**
   * Runs one listener for one organization until it has handled what is committed now, or waits for
   * the run that holds it (this instance's in the background, or another instance's), for at most
   * `timeoutMs`; not past a failure waiting to retry. For reads that must see its effects.
   */
  async catchUp(name: string, organizationId: string, timeoutMs = 10_000): Promise<void> {
    const listener = this.listeners.get(name);
    if (!listener) return;
    // Committed is not yet numbered: events written outside a request (the history import, jobs) get their
    // numbers after their commit, and a target read before that would leave them out.
    await this.log.numberPending();
    const [target] = await this.sql.query<{ last_seq: string }>('listeners.target', `SELECT last_seq FROM event_sequences WHERE organization_id = $1`, [
      organizationId,
    ]);
    if (!target) return;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (await this.runBatch(listener, organizationId));
      const [checkpoint] = await this.sql.query<{ seq: string; retry_at: Date | null }>(
        'listeners.checkpoint',
        `SELECT seq, retry_at FROM event_checkpoints WHERE listener = $1 AND organization_id = $2`,
        [name, organizationId],
      );
      if (checkpoint && (Number(checkpoint.seq) >= Number(target.last_seq) || checkpoint.retry_at !== null)) return;
      if (Date.now() > deadline) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  private poke(organizationId: string): void {
    for (const name of this.listeners.keys()) this.due.add(`${name}|${organizationId}`);
    this.settling ??= setTimeout(() => {
      this.settling = null;
      this.kick();
    }, SETTLE_MS);
  }

  /** Finds every (listener, organization) behind the log, failures whose retry time came included (a failed look is logged by the runner). */
  private async sweep(): Promise<void> {
    if (this.closing) return;
    await this.log.numberPending();
    if (this.listeners.size === 0) return;
    const rows = await this.sql.query<{ name: string; organization_id: string }>(
      'listeners.sweep',
      `SELECT l.name, s.organization_id FROM event_sequences s CROSS JOIN unnest($1::text[]) AS l(name)
       LEFT JOIN event_checkpoints c ON c.listener = l.name AND c.organization_id = s.organization_id
       WHERE s.last_seq > COALESCE(c.seq, 0) AND (c.retry_at IS NULL OR c.retry_at <= now())
       LIMIT 1000`,
      [[...this.listeners.keys()]],
    );
    for (const row of rows) this.due.add(`${row.name}|${row.organization_id}`);
    this.kick();
  }

  private kick(): void {
    if (this.running || this.due.size === 0 || this.closing) return;
    this.running = this.work().finally(() => {
      this.running = null;
      this.kick();
    });
  }

  private async work(): Promise<void> {
    while (this.due.size > 0 && !this.closing) {
      const [key] = this.due;
      this.due.delete(key);
      const [name, organizationId] = key.split('|');
      const listener = this.listeners.get(name);
      if (!listener) continue;
      let more = true;
      while (more && !this.closing) more = await this.runBatch(listener, organizationId);
    }
  }

  /** One batch in one transaction; true when there may be more. */
  private async runBatch(listener: DurableListener, organizationId: string): Promise<boolean> {
    // The batch being handled, for the log when its transaction fails.
    let batch: AnyStoredEvent[] = [];
    try {
      const outcome = await this.dataSource.transaction(async (manager) => {
        const sql = this.sql.in(manager);
        await sql.query(
          'listeners.ensureCheckpoint',
          `INSERT INTO event_checkpoints (listener, organization_id, seq) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING`,
          [listener.name, organizationId],
        );
        const [checkpoint] = await sql.query<{ seq: string }>(
          'listeners.claimCheckpoint',
          `SELECT seq FROM event_checkpoints WHERE listener = $1 AND organization_id = $2 AND (retry_at IS NULL OR retry_at <= now())
           FOR UPDATE SKIP LOCKED`,
          [listener.name, organizationId],
        );
        // Another instance is on it, or it waits to retry after a failure.
        if (!checkpoint) return { more: false, handled: false };
        const events = await this.log.readIn(manager, organizationId, Number(checkpoint.seq), BATCH);
        if (events.length === 0) return { more: false, handled: false };
        batch = events.filter((event) => listener.types.includes(event.type));
        if (batch.length > 0) await listener.handle(manager, batch);
        await sql.query(
          'listeners.advance',
          `UPDATE event_checkpoints SET seq = $3, failures = 0, retry_at = NULL WHERE listener = $1 AND organization_id = $2`,
          [listener.name, organizationId, events[events.length - 1].seq],
        );
        return { more: events.length === BATCH, handled: batch.length > 0 };
      });
      if (outcome.handled) listener.afterCommit?.(organizationId);
      return outcome.more;
    } catch (error) {
      await this.backOff(listener, organizationId, batch, error as Error);
      return false;
    }
  }

  private async backOff(listener: DurableListener, organizationId: string, events: AnyStoredEvent[], error: Error): Promise<void> {
    try {
      // An upsert: the failed transaction may have been the one that made the checkpoint.
      const rows = await this.sql.query<{ failures: number }>(
        'listeners.backOff',
        `INSERT INTO event_checkpoints (listener, organization_id, seq, failures, retry_at) VALUES ($1, $2, 0, 1, now() + interval '1 second')
         ON CONFLICT (listener, organization_id) DO UPDATE SET failures = event_checkpoints.failures + 1,
           retry_at = now() + make_interval(secs => LEAST($3::float8, 2 ^ LEAST(event_checkpoints.failures, 20)))
         RETURNING failures`,
        [listener.name, organizationId, MAX_BACKOFF_MS / 1000],
      );
      const line = { listener: listener.name, organizationId, fromSeq: events[0]?.seq, toSeq: events.at(-1)?.seq, failures: rows[0]?.failures };
      if (isDatabaseUnavailable(error)) this.logger.warn(line, `A durable event listener could not reach the database; it will retry: ${error.message}`);
      else this.logger.error({ err: error, ...line }, 'A durable event listener failed; it will retry');
    } catch (inner) {
      // The database away: it retries from its checkpoint when the database is back (nothing is lost).
      if (isDatabaseUnavailable(error) || isDatabaseUnavailable(inner)) {
        this.logger.warn({ listener: listener.name, organizationId }, `A durable event listener could not reach the database: ${error.message}`);
        return;
      }
      this.logger.error(
        { err: error, listener: listener.name, organizationId },
        `A durable event listener failed, and so did recording it: ${(inner as Error).message}`,
      );
    }
  }
}

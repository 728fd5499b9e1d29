import { Writable } from 'node:stream';
import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { OnEvent } from '@nestjs/event-emitter';
import { EventLog, INSTANCE_DRAINING, LiveEvents, MessageDelta, OnDomainEvent, StoredEvent } from '../../platform/events';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { Metrics } from '../../platform/metrics';
import { InFlight } from '../../platform/rate-limit/in-flight';
import { credentialIdOf, Principal, securityActorOf } from '../auth';
import { EventsError, EventsErrorCode } from './domain/events.errors';
import type { AnyStoredEvent } from '../../platform/events';
import { EventPresenter, PublicEvent } from './event-presenter';
import { EventViewer, EventVisibility } from './event-visibility';

/** What a stream carries: an organization's events, or one session's, maybe of some types only. */
export interface StreamScope {
  sessionId?: string;
  types?: readonly string[];
}

/** The live-only event type: sent to open streams as it happens, never in the log (see LiveEvents). */
export const MESSAGE_DELTA = 'message.delta';
/** Deltas a stream may have waiting for their visibility check; past it, more are dropped (they are best effort). */
const DELTAS_WAITING_MAX = 100;

/** What a refused stream is told to wait before trying again. */
const RETRY_AFTER_SECONDS = 5;
/** What EventSource clients wait before reconnecting after the stream ends (the SSE `retry` field). */
const RECONNECT_MS = 2_000;
/** Events read from the log at a time. */
const BATCH = 200;

/**
 * Open event streams (server-sent events) on this instance: their limits per credential and per
 * organization, and their end, when the server shuts down or the credential stops being valid
 * (its key revoked, its user removed or given another role: the client reconnects and is
 * authorized again).
 */
@Injectable()
export class EventStreams implements OnModuleDestroy {
  private readonly logger = new Logger(EventStreams.name);
  private readonly perCredential = new InFlight();
  private readonly perOrganization = new InFlight();
  private readonly open = new Set<LiveStream>();
  /**
   * Reads under way per organization, shared by the streams that ask for the same events at the same
   * time. Forgotten as soon as the organization's log grows: a read begun before a commit may miss it.
   */
  private readonly reading = new Map<string, Map<string, Promise<Batch>>>();

  constructor(
    private readonly log: EventLog,
    private readonly presenter: EventPresenter,
    private readonly visibility: EventVisibility,
    private readonly config: AppConfig,
    metrics: Metrics,
    private readonly live: LiveEvents,
  ) {
    metrics.gauge({ name: 'event_streams_open', help: 'Event streams (server-sent events) open on this instance.', read: () => this.open.size });
    // Before any stream listens: the streams woken by a commit must not join a read begun before it.
    log.growth.on('appended', (organizationId: string) => this.reading.delete(organizationId));
    log.growth.on('resumed', () => this.reading.clear());
  }

  /** How many streams are open on this instance (tests and the bench look). */
  get size(): number {
    return this.open.size;
  }

  /** Takes a slot for a new stream, or throws 429; call the returned function once, when it ends. */
  admit(principal: Principal): () => void {
    const credential = credentialIdOf(principal);
    const over = (setting: string, limit: number, whose: string): never => {
      logSecurityEvent('quota.exceeded', securityActorOf(principal), { quota: setting, limit });
      const error = new EventsError(
        EventsErrorCode.TooManyStreams,
        `${whose} already ${limit} event streams open on this server (${setting}). Close one, or retry after ${RETRY_AFTER_SECONDS} s.`,
        { quota: setting, limit },
      );
      error.retryAfterSeconds = RETRY_AFTER_SECONDS;
      throw error;
    };
    if (this.perCredential.count(credential) >= this.config.EVENT_STREAMS_PER_CREDENTIAL) {
      over('EVENT_STREAMS_PER_CREDENTIAL', this.config.EVENT_STREAMS_PER_CREDENTIAL, 'This credential has');
    }
    if (this.perOrganization.count(principal.organizationId) >= this.config.EVENT_STREAMS_PER_ORGANIZATION) {
      over('EVENT_STREAMS_PER_ORGANIZATION', this.config.EVENT_STREAMS_PER_ORGANIZATION, 'Your organization has');
    }
    const releaseCredential = this.perCredential.take(credential);
    const releaseOrganization = this.perOrganization.take(principal.organizationId);
    return () => {
      releaseCredential();
      releaseOrganization();
    };
  }

  /**
   * Starts sending the events after `after` to `out`: first those already in the log, then each as
   * it is committed (here or on another instance), with a heartbeat comment between. `release`
   * (from `admit`) is called when the stream ends, whoever ends it.
   */
  start(principal: Principal, scope: StreamScope, after: number, out: Writable, release: () => void): void {
    const viewer = this.visibility.viewer(principal);
    const stream = new LiveStream(principal, after, out, {
      log: this.log,
      live: this.live,
      read: (from) => this.read(principal, scope, from),
      wantsDelta: (delta) => this.wantsDelta(principal, scope, viewer, delta),
      viewer,
      heartbeatMs: this.config.EVENT_STREAM_HEARTBEAT_MS,
      logger: this.logger,
      onClose: () => {
        this.open.delete(stream);
        release();
      },
    });
    this.open.add(stream);
    stream.begin();
  }

  /**
   * The next events of the stream's scope after `after`, presented. Streams woken by the same commit
   * ask for the same events at once (all of them are usually at the last event): one read and one
   * presentation serve them all, each then keeps what its caller may see.
   */
  private read(principal: Principal, scope: StreamScope, after: number): Promise<Batch> {
    const messageHistory = principal.features.messageHistory === true;
    const key = JSON.stringify([after, scope.sessionId ?? null, scope.types ?? null, messageHistory]);
    let reads = this.reading.get(principal.organizationId);
    if (!reads) {
      reads = new Map();
      this.reading.set(principal.organizationId, reads);
    }
    let batch = reads.get(key);
    if (!batch) {
      batch = (async () => {
        const events = await this.log.read(principal.organizationId, { after, limit: BATCH, sessionId: scope.sessionId, types: scope.types });
        return { events, presented: await this.presenter.present(events, { messageHistory }) };
      })();
      reads.set(key, batch);
      const started = reads;
      const forget = () => {
        started.delete(key);
        if (started.size === 0 && this.reading.get(principal.organizationId) === started) this.reading.delete(principal.organizationId);
      };
      batch.then(forget, forget);
    }
    return batch;
  }

  /**
   * Whether a stream sends a delta: one of its scope (session, `types`), of a session its caller may
   * read, where the organization keeps message history (without it `message.added` carries no
   * message, so no text of one is streamed either). The same for every kind: whoever may read a
   * session's messages reads their thinking and tool results whole (no control hides them).
   */
  private async wantsDelta(principal: Principal, scope: StreamScope, viewer: EventViewer, delta: MessageDelta): Promise<boolean> {
    if (delta.organizationId !== principal.organizationId) return false;
    if (scope.sessionId !== undefined && scope.sessionId !== delta.sessionId) return false;
    if (scope.types !== undefined && !scope.types.includes(MESSAGE_DELTA)) return false;
    if (principal.features.messageHistory !== true) return false;
    return viewer.seesSession(delta.sessionId);
  }

  /** When the instance begins to stop, and at the latest when it closes: each client reconnects after the stream's `retry`, through the load balancer. */
  @OnEvent(INSTANCE_DRAINING)
  onModuleDestroy(): void {
    for (const stream of [...this.open]) stream.close();
  }

  @OnDomainEvent('api_key.revoked')
  onKeyRevoked(event: StoredEvent<'api_key.revoked'>): void {
    this.closeWhere((principal) => principal.credential.kind === 'api_key' && principal.credential.apiKeyId === event.data.apiKeyId);
  }

  @OnDomainEvent('member.changed')
  onMemberChanged(event: StoredEvent<'member.changed'>): void {
    if (event.data.change === 'added') return;
    this.closeWhere((principal) => principal.organizationId === event.organizationId && principal.userId === event.data.userId);
  }

  private closeWhere(match: (principal: Principal) => boolean): void {
    for (const stream of [...this.open]) if (match(stream.principal)) stream.close();
  }
}

interface Batch {
  events: AnyStoredEvent[];
  presented: PublicEvent[];
}

interface LiveStreamDeps {
  log: EventLog;
  live: LiveEvents;
  read: (after: number) => Promise<Batch>;
  wantsDelta: (delta: MessageDelta) => Promise<boolean>;
  viewer: EventViewer;
  heartbeatMs: number;
  logger: Logger;
  onClose: () => void;
}

/** One open stream: reads the log by sequence number from its cursor whenever the organization's log grows. */
class LiveStream {
  private pumping = false;
  private again = false;
  private closed = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly onGrowth = (organizationId: string) => {
    if (organizationId === this.principal.organizationId) this.kick();
  };
  private readonly onResumed = () => this.kick();
  /** Deltas in arrival order: each waits for the one before it (visibility is checked asynchronously). */
  private deltas: Promise<void> = Promise.resolve();
  private deltasWaiting = 0;
  private readonly onDelta = (delta: MessageDelta) => {
    if (delta.organizationId !== this.principal.organizationId || this.closed || this.deltasWaiting >= DELTAS_WAITING_MAX) return;
    this.deltasWaiting++;
    this.deltas = this.deltas
      .then(() => this.sendDelta(delta))
      .catch((error: Error) => this.deps.logger.warn(`A message delta was not sent to a stream: ${error.message}`))
      .finally(() => this.deltasWaiting--);
  };

  constructor(
    readonly principal: Principal,
    private cursor: number,
    private readonly out: Writable,
    private readonly deps: LiveStreamDeps,
  ) {}

  begin(): void {
    // Listening before reading what is there: an event committed meanwhile is read either way, by
    // its number, so none is missed and none is sent twice.
    this.deps.log.growth.on('appended', this.onGrowth);
    this.deps.log.growth.on('resumed', this.onResumed);
    this.deps.live.emitter.on('delta', this.onDelta);
    this.out.once('close', () => this.close());
    this.out.once('error', () => this.close());
    this.out.write(`retry: ${RECONNECT_MS}\n: connected\n\n`);
    this.heartbeat = setInterval(() => {
      if (!this.closed) this.out.write(': heartbeat\n\n');
    }, this.deps.heartbeatMs);
    this.heartbeat.unref();
    this.kick();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.deps.log.growth.off('appended', this.onGrowth);
    this.deps.log.growth.off('resumed', this.onResumed);
    this.deps.live.emitter.off('delta', this.onDelta);
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (!this.out.writableEnded && !this.out.destroyed) this.out.end();
    this.deps.onClose();
  }

  private kick(): void {
    if (this.closed) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump()
      .catch((error: Error) => {
        // The client reconnects with the last id it got and loses nothing.
        this.deps.logger.warn(`An event stream could not read the log and ends: ${error.message}`);
        this.close();
      })
      .finally(() => {
        this.pumping = false;
      });
  }

  private async pump(): Promise<void> {
    do {
      this.again = false;
      let full = true;
      while (full && !this.closed) {
        const { events, presented } = await this.deps.read(this.cursor);
        full = events.length === BATCH;
        if (events.length === 0) break;
        const visible = new Set((await this.deps.viewer.filter(events)).map((e) => e.id));
        for (const event of presented) {
          if (this.closed) return;
          if (!visible.has(event.id)) continue;
          if (!this.out.write(`id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)) await this.drained();
        }
        this.cursor = events[events.length - 1].seq;
      }
    } while (this.again && !this.closed);
  }

  /**
   * A delta without an `id:` line, so that `Last-Event-ID` stays the last logged event's. A client
   * that has not taken what was written before loses the delta rather than this server's memory.
   */
  private async sendDelta(delta: MessageDelta): Promise<void> {
    if (this.closed || !(await this.deps.wantsDelta(delta)) || this.closed || this.out.writableNeedDrain) return;
    const { organizationId, sessionId, turnId, step, kind, toolUseId, toolName, text, occurredAt } = delta;
    const tool = toolUseId !== undefined ? { toolUseId, toolName } : {};
    const event = { type: MESSAGE_DELTA, occurredAt, organizationId, sessionId, data: { sessionId, turnId, step, kind, ...tool, text } };
    this.out.write(`event: ${MESSAGE_DELTA}\ndata: ${JSON.stringify(event)}\n\n`);
  }

  /** Waits until the client has taken what was written (memory stays bounded for a slow client). */
  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.out.off('drain', done);
        this.out.off('close', done);
        resolve();
      };
      this.out.once('drain', done);
      this.out.once('close', done);
    });
  }
}

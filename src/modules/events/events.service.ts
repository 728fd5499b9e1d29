import { Writable } from 'node:stream';
import { Injectable } from '@nestjs/common';
import { AnyStoredEvent, EventLog, EventType } from '../../platform/events';
import { decodeCursor, encodeCursor } from '../../platform/http/cursor';
import { Page } from '../../platform/http/pagination';
import { validationError } from '../../platform/http/validation';
import { Principal } from '../auth';
import { SessionReader } from '../sessions';
import { EventsError, EventsErrorCode } from './domain/events.errors';
import { EventPresenter, PublicEvent } from './event-presenter';
import { StreamScope, EventStreams } from './event-streams';
import { EventVisibility } from './event-visibility';
import { EVENT_TYPES } from './schemas/event.schemas';

/** Events read at a time when a list must skip those the caller may not see. */
const SCAN_BATCH = 200;
/** At most this many are looked at for one page: a page may then hold fewer than `limit` and still say `hasMore`. */
const SCAN_MAX = 5_000;
/** Audit entries exported at a time. */
const EXPORT_BATCH = 500;

export interface AuditFilter {
  types?: EventType[];
  actorUserId?: string;
  since?: Date;
  until?: Date;
}

/** The public event API: streams and lists of an organization's or a session's events, and the audit log. */
@Injectable()
export class EventsService {
  constructor(
    private readonly log: EventLog,
    private readonly presenter: EventPresenter,
    private readonly visibility: EventVisibility,
    private readonly streams: EventStreams,
    private readonly sessions: SessionReader,
  ) {}

  /** 404 (the sessions' own) unless the caller may read the session. */
  async requireSession(principal: Principal, sessionId: string): Promise<void> {
    await this.sessions.requireReadable(principal, sessionId);
  }

  /**
   * Opens a stream to `out` after checking everything that can refuse it (the caller's access, the
   * limits, the resume point): once this returns, the stream has begun.
   */
  async openStream(principal: Principal, scope: StreamScope, after: number | undefined, open: () => Writable): Promise<void> {
    if (scope.sessionId !== undefined) await this.requireSession(principal, scope.sessionId);
    const release = this.streams.admit(principal);
    try {
      const start = await this.startAfter(principal.organizationId, after, 'live');
      this.streams.start(principal, scope, start, open(), release);
    } catch (error) {
      release();
      throw error;
    }
  }

  /** A page of the events after `after` (or the cursor's position), oldest first, that the caller may see. */
  async list(principal: Principal, scope: StreamScope, query: { after?: number; cursor?: string; limit: number }): Promise<Page<PublicEvent>> {
    if (scope.sessionId !== undefined) await this.requireSession(principal, scope.sessionId);
    if (query.after !== undefined && query.cursor !== undefined) {
      throw validationError([{ field: 'after', message: 'give after or cursor, not both' }]);
    }
    const list = scope.sessionId ? `events:${scope.sessionId}` : 'events';
    const from = query.cursor !== undefined ? (decodeCursor(list, query.cursor, ['number'])[0] as number) : query.after;
    let position = await this.startAfter(principal.organizationId, from, 'oldest');
    const viewer = this.visibility.viewer(principal);
    const items: AnyStoredEvent[] = [];
    let hasMore = false;
    for (let scanned = 0; ;) {
      const size = viewer.seesEverything ? query.limit - items.length + 1 : SCAN_BATCH;
      const batch = await this.log.read(principal.organizationId, { after: position, limit: size, sessionId: scope.sessionId, types: scope.types });
      scanned += batch.length;
      for (const event of await viewer.filter(batch)) {
        if (items.length === query.limit) {
          hasMore = true;
          break;
        }
        items.push(event);
        position = event.seq;
      }
      if (hasMore) break;
      if (batch.length > 0) position = batch[batch.length - 1].seq;
      if (batch.length < size) break;
      if (scanned >= SCAN_MAX || items.length === query.limit) {
        hasMore = true;
        break;
      }
    }
    const events = await this.presenter.present(items, { messageHistory: principal.features.messageHistory === true });
    return { items: events, pagination: { hasMore, nextCursor: hasMore ? encodeCursor(list, [position]) : null } };
  }

  /** A page of the audit log, newest first. */
  async audit(principal: Principal, query: AuditFilter, page: { cursor?: string; limit: number }): Promise<Page<PublicEvent>> {
    const before = page.cursor !== undefined ? (decodeCursor('audit-log', page.cursor, ['number'])[0] as number) : undefined;
    const rows = await this.log.read(principal.organizationId, { ...this.auditFilter(query), after: 0, before, newestFirst: true, limit: page.limit + 1 });
    const items = rows.slice(0, page.limit);
    const hasMore = rows.length > page.limit;
    const entries = await this.presenter.present(items, { messageHistory: false, audit: true });
    return { items: entries, pagination: { hasMore, nextCursor: hasMore ? encodeCursor('audit-log', [items[items.length - 1].seq]) : null } };
  }

  /** Every matching audit entry, newest first, one JSON line each, a batch at a time (memory stays bounded for any size). */
  async exportAudit(principal: Principal, query: AuditFilter, out: Writable): Promise<void> {
    let before: number | undefined;
    const gone = new Promise<void>((resolve) => out.once('close', resolve));
    let open = true;
    void gone.then(() => (open = false));
    while (open) {
      const rows = await this.log.read(principal.organizationId, { ...this.auditFilter(query), after: 0, before, newestFirst: true, limit: EXPORT_BATCH });
      if (rows.length === 0) break;
      const entries = await this.presenter.present(rows, { messageHistory: false, audit: true });
      const chunk = entries.map((entry) => `${JSON.stringify(entry)}\n`).join('');
      if (!out.write(chunk)) await Promise.race([new Promise((resolve) => out.once('drain', resolve)), gone]);
      before = rows[rows.length - 1].seq;
      if (rows.length < EXPORT_BATCH) break;
    }
    if (open) out.end();
  }

  /**
   * The event types named in a comma-separated list, or 400 naming the unknown ones. `live` also
   * allows the live-only types (streams: `message.delta`), which the log never holds.
   */
  static types(field: string, list: string | undefined, live: readonly string[] = []): EventType[] | undefined {
    if (list === undefined) return undefined;
    const names = [...new Set(list.split(','))];
    const known = [...EVENT_TYPES, ...live];
    const unknown = names.filter((name) => !known.includes(name));
    if (unknown.length > 0) {
      throw validationError([{ field, message: `names unknown event types (${unknown.join(', ')}); known: ${known.join(', ')}` }]);
    }
    return names as EventType[];
  }

  private auditFilter(query: AuditFilter) {
    return { types: query.types, actorUserId: query.actorUserId, since: query.since, until: query.until };
  }

  /**
   * Where reading starts: after `after`, checked against the log's bounds. Without one, a stream
   * starts at the log's end (live only) and a list at its beginning.
   */
  private async startAfter(organizationId: string, after: number | undefined, otherwise: 'live' | 'oldest'): Promise<number> {
    const { oldest, last } = await this.log.bounds(organizationId);
    if (after === undefined) return otherwise === 'live' ? last : 0;
    if (after > last) {
      throw new EventsError(EventsErrorCode.InvalidEventId, `There is no event ${after} in your organization's log: its last is ${last}.`, { lastId: last });
    }
    if (after > 0 && after < oldest - 1) {
      throw new EventsError(
        EventsErrorCode.EventExpired,
        `The events after ${after} are no longer kept (EVENT_RETENTION_DAYS): the oldest is ${oldest}. Resume after ${oldest - 1}, or from 0, and reconcile what you missed from the objects themselves.`,
        { oldestId: oldest },
      );
    }
    return after;
  }
}

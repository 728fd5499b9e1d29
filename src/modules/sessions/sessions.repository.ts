import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { decodeCursor, encodeCursor, invalidCursor } from '../../platform/http/cursor';
import { Page, toPage } from '../../platform/http/pagination';
import { NewestFirst } from '../../platform/database/keyset';
import { Sql } from '../../platform/database/sql';
import { EventActor, EventLog } from '../../platform/events';
import { MessageEntity, SessionEntity, ToolApprovalEntity } from './entities';
import { ToolApprovalStatus } from './domain/tool-approval';
import { ContentBlock, MessageAttributes, MessageRole, UserMessageSource } from './domain/message';
import { ArchivedFilter, StoredSessionSettings, TokenUsage } from './domain/session-settings';
import { SessionStatus, SessionTrigger, statusAfterSql } from './domain/session-status';

/**
 * A timestamp as Unix ms (a float8 the driver hands over as a number): parsing timestamp text
 * into Dates was a measurable share of a list request's time.
 */
const ms = (column: string) => `(extract(epoch from ${column}) * 1000)::float8 AS ${column.split('.').pop()}`;

/** Only what a Session view shows: lists read 21 rows per page, so every column counts. */
const SUMMARY_COLUMNS = `s.id, s.status, s.message_count, s.title, s.computer_id, s.settings,
  ${ms('s.created_at')}, ${ms('s.updated_at')}, ${ms('s.completed_at')}, s.owner_id, s.work_computer_id,
  ${ms('s.turn_interrupted_at')}, s.pending_tool_approvals`;

/** The whole session: the view's columns, its owner and the work-queue state. */
const SESSION_COLUMNS = `${SUMMARY_COLUMNS}, s.organization_id, s.last_message_id, s.last_user_seq,
  s.claimed_seq, ${ms('s.pending_since')}, s.turn_base_seq, s.turn_id, s.turn_computer_id, ${ms('s.lease_expires_at')}, s.turn_interrupted_by`;

/** What a Message view shows, and its seq for the cursor. */
const MESSAGE_VIEW_COLUMNS = `m.id, m.seq, m.role, m.parent_id, m.user_message_source, m.content, m.attributes,
  ${ms('m.created_at')}, ${ms('m.updated_at')}`;

const MESSAGE_COLUMNS = `${MESSAGE_VIEW_COLUMNS}, m.session_id, m.author_id`;

const APPROVAL_COLUMNS = `a.id, a.organization_id, a.session_id, a.turn_id, a.tool_name, a.tool_call_id, a.summary, a.input, a.status, a.message,
  ${ms('a.requested_at')}, ${ms('a.expires_at')}, ${ms('a.resolved_at')}, a.resolved_by`;

interface ToolApprovalRow {
  id: string;
  organization_id: string;
  session_id: string;
  turn_id: string;
  tool_name: string;
  tool_call_id: string | null;
  summary: string;
  input: Record<string, unknown>;
  status: ToolApprovalStatus;
  message: string | null;
  requested_at: number;
  expires_at: number;
  resolved_at: number | null;
  resolved_by: EventActor | null;
}

/** A lease renewal, except for an interrupted turn: its lease only runs out. */
const RENEWED_LEASE = (value: string) => `CASE WHEN s.turn_interrupted_at IS NULL THEN ${value} ELSE s.lease_expires_at END`;

interface SessionRow {
  id: string;
  organization_id: string;
  owner_id: string;
  computer_id: string | null;
  title: string | null;
  status: SessionStatus;
  message_count: number;
  last_message_id: string | null;
  last_user_seq: number;
  claimed_seq: number;
  work_computer_id: string | null;
  pending_since: number | null;
  turn_base_seq: number;
  turn_id: string | null;
  turn_computer_id: string | null;
  lease_expires_at: number | null;
  turn_interrupted_at: number | null;
  turn_interrupted_by: EventActor | null;
  pending_tool_approvals: number;
  settings: StoredSessionSettings;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

type SummaryRow = Pick<
  SessionRow,
  | 'id'
  | 'status'
  | 'message_count'
  | 'title'
  | 'computer_id'
  | 'settings'
  | 'created_at'
  | 'updated_at'
  | 'completed_at'
  | 'owner_id'
  | 'work_computer_id'
  | 'turn_interrupted_at'
  | 'pending_tool_approvals'
>;

type MessageSummaryRow = Omit<MessageRow, 'session_id' | 'author_id'>;

/** A message as lists show it. */
export type MessageSummary = Omit<MessageEntity, 'organizationId' | 'sessionId' | 'authorId'>;

/** A session as lists show it. */
export type SessionSummary = Pick<
  SessionEntity,
  | 'id'
  | 'status'
  | 'messageCount'
  | 'title'
  | 'computerId'
  | 'settings'
  | 'createdAt'
  | 'updatedAt'
  | 'completedAt'
  | 'ownerId'
  | 'workComputerId'
  | 'turnInterruptedAt'
  | 'pendingToolApprovals'
>;

interface MessageRow {
  id: string;
  session_id: string;
  seq: number;
  role: MessageRole;
  parent_id: string | null;
  user_message_source: UserMessageSource | null;
  author_id: string | null;
  content: ContentBlock[];
  attributes: MessageAttributes;
  created_at: number;
  updated_at: number;
}

export interface SessionFilter {
  organizationId: string;
  /** Only this user's sessions (guests; members under restrictMemberVisibility). */
  ownerId?: string;
  computerId?: string;
  /** Archived sessions (`settings.archivedAt` set): left out, listed with the others, or listed alone. */
  archived: ArchivedFilter;
  /** Only sessions with a tag of this name. */
  tag?: string;
}

/** A session's key: its organization leads it (see the TenantKeys migration), so every statement on one session names both. */
export type SessionKey = Pick<SessionEntity, 'organizationId' | 'id'>;

/** A session row changed under its lock, with the status it had before. */
export interface SessionChange {
  session: SessionEntity;
  previousStatus: SessionStatus;
  /** The newest message before this change (the parent of the first new message). */
  previousLastMessageId: string | null;
}

/** A stored message with what its session says about it (see SessionsReader). */
export interface MessageWithSession {
  session: { id: string; organizationId: string; ownerId: string; settings: StoredSessionSettings };
  message: {
    id: string;
    role: MessageRole;
    userMessageSource: string | null;
    authorId: string | null;
    content: ContentBlock[];
    attributes: MessageAttributes;
    createdAt: Date;
  };
}

/**
 * All SQL of the Sessions module. Hot paths are single statements: adding messages takes the
 * session's row lock, numbers the messages and moves the status in one UPDATE.
 */
@Injectable()
export class SessionsRepository {
  static readonly sessionsOrder = new NewestFirst('sessions');

  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
    private readonly events: EventLog,
  ) {}

  async insertSession(manager: EntityManager, s: SessionEntity): Promise<void> {
    await this.sql.in(manager).query(
      'sessions.insert',
      `INSERT INTO sessions (id, organization_id, owner_id, computer_id, title, status, settings, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [s.id, s.organizationId, s.ownerId, s.computerId, s.title, s.status, JSON.stringify(s.settings), s.createdAt, s.updatedAt],
    );
  }

  async findSession(id: string, organizationId: string, manager?: EntityManager, lock = false): Promise<SessionEntity | null> {
    const rows = await this.sql
      .in(manager)
      .query<SessionRow>(
        lock ? 'sessions.findForUpdate' : 'sessions.find',
        `SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.id = $1 AND s.organization_id = $2${lock ? ' FOR UPDATE' : ''}`,
        [id, organizationId],
      );
    return rows.length > 0 ? toSession(rows[0]) : null;
  }

  /** The sessions of the organization among `ids`, with their owners. */
  async sessionsAmong(organizationId: string, ids: string[]): Promise<Array<{ id: string; ownerId: string }>> {
    if (ids.length === 0) return [];
    return this.sql.query<{ id: string; ownerId: string }>(
      'sessions.among',
      `SELECT id, owner_id AS "ownerId" FROM sessions WHERE organization_id = $1 AND id = ANY($2::uuid[])`,
      [organizationId, ids],
    );
  }

  async listSessions(filter: SessionFilter, cursor: string | undefined, limit: number): Promise<Page<SessionSummary>> {
    const after = SessionsRepository.sessionsOrder.positionOf(cursor);
    const values: unknown[] = [filter.organizationId, limit + 1];
    const where = ['s.organization_id = $1'];
    if (filter.ownerId) where.push(`s.owner_id = $${values.push(filter.ownerId)}`);
    if (filter.computerId) where.push(`s.computer_id = $${values.push(filter.computerId)}`);
    if (filter.archived === 'exclude') where.push(`NOT (s.settings ? 'archivedAt')`);
    if (filter.archived === 'only') where.push(`s.settings ? 'archivedAt'`);
    if (filter.tag !== undefined) where.push(`s.settings->'tags' @> $${values.push(JSON.stringify([{ name: filter.tag }]))}::jsonb`);
    if (after) where.push(`(s.created_at, s.id) < ($${values.push(after.createdAt)}, $${values.push(after.id)})`);
    const variant = `${filter.ownerId ? 'o' : ''}${filter.computerId ? 'c' : ''}${filter.archived[0]}${filter.tag !== undefined ? 't' : ''}${after ? 'k' : ''}`;
    const rows = await this.sql.query<SummaryRow>(
      `sessions.list.${variant}`,
      `SELECT ${SUMMARY_COLUMNS} FROM sessions s WHERE ${where.join(' AND ')} ORDER BY s.created_at DESC, s.id DESC LIMIT $2`,
      values,
    );
    return toPage(rows.map(toSummary), limit, (row) => SessionsRepository.sessionsOrder.cursorOf(row));
  }

  async updateSession(
    manager: EntityManager,
    session: SessionKey,
    changes: { title?: string | null; settings: StoredSessionSettings; updatedAt: Date },
  ): Promise<Date> {
    const [row] = await this.sql.in(manager).query<{ updated_at: Date }>(
      'sessions.update',
      `UPDATE sessions SET title = CASE WHEN $2 THEN $3 ELSE title END, settings = $4, updated_at = GREATEST(updated_at, $5)
       WHERE organization_id = $6 AND id = $1 RETURNING updated_at`,
      [session.id, changes.title !== undefined, changes.title ?? null, JSON.stringify(changes.settings), changes.updatedAt, session.organizationId],
    );
    return row.updated_at;
  }

  /** Deletes the session; its messages go with it (ON DELETE CASCADE), in the same statement. */
  async deleteSession(session: SessionKey): Promise<void> {
    await this.sql.query('sessions.delete', `DELETE FROM sessions WHERE organization_id = $1 AND id = $2`, [session.organizationId, session.id]);
  }

  /**
   * Deletes up to `limit` of the organization's sessions with no activity since `before` (their
   * messages go with them), skipping any an agent holds a live turn on. Rows another instance is
   * deleting are skipped, not waited for. Returns how many were deleted.
   */
  async deleteInactive(organizationId: string, before: Date, limit: number): Promise<number> {
    const rows = await this.sql.query<{ id: string }>(
      'sessions.deleteInactive',
      `DELETE FROM sessions WHERE organization_id = $1 AND id IN (
         SELECT id FROM sessions
         WHERE organization_id = $1 AND updated_at < $2
           AND NOT (status = 'running' AND lease_expires_at > clock_timestamp())
         ORDER BY updated_at
         LIMIT $3
         FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      [organizationId, before, limit],
    );
    return rows.length;
  }

  /**
   * Numbers `count` agent messages under the session's row lock and renews the turn's lease.
   * The time is taken under the lock and never goes backwards (see addUserMessage).
   */
  async reserveAgentMessages(
    manager: EntityManager,
    input: { session: SessionKey; count: number; lastMessageId: string; leaseExpiresAt: Date },
  ): Promise<SessionChange> {
    const rows = await this.sql.in(manager).query<SessionRow & { previous_status: SessionStatus; previous_last_message_id: string | null }>(
      'messages.reserveAgent',
      `WITH old AS (SELECT organization_id, id, status, last_message_id FROM sessions WHERE organization_id = $5 AND id = $1 FOR UPDATE)
       UPDATE sessions s SET
         message_count = s.message_count + $2,
         last_message_id = $3,
         updated_at = GREATEST(s.updated_at, date_trunc('milliseconds', clock_timestamp())),
         lease_expires_at = ${RENEWED_LEASE('$4')}
       FROM old WHERE s.organization_id = old.organization_id AND s.id = old.id
       RETURNING ${SESSION_COLUMNS}, old.status AS previous_status, old.last_message_id AS previous_last_message_id`,
      [input.session.id, input.count, input.lastMessageId, input.leaseExpiresAt, input.session.organizationId],
    );
    const row = rows[0];
    return { session: toSession(row), previousStatus: row.previous_status, previousLastMessageId: row.previous_last_message_id };
  }

  async insertMessages(manager: EntityManager, messages: MessageEntity[]): Promise<void> {
    const params: unknown[] = [];
    const rows = messages.map((m) => {
      params.push(
        m.organizationId,
        m.id,
        m.sessionId,
        m.seq,
        m.role,
        m.parentId,
        m.userMessageSource,
        m.authorId,
        JSON.stringify(m.content),
        JSON.stringify(m.attributes),
        m.createdAt,
        m.updatedAt,
      );
      const at = params.length - 12;
      return `(${Array.from({ length: 12 }, (_, i) => `$${at + i + 1}`).join(', ')})`;
    });
    await this.sql.in(manager).query(
      `messages.insert.${messages.length}`,
      `INSERT INTO messages (organization_id, id, session_id, seq, role, parent_id, user_message_source, author_id, content, attributes, created_at, updated_at)
       VALUES ${rows.join(', ')}`,
      params,
    );
  }

  /** Ids among `ids` that are messages of the session. */
  async existingMessageIds(manager: EntityManager, session: SessionKey, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.sql
      .in(manager)
      .query<{ id: string }>('messages.existing', `SELECT id FROM messages WHERE organization_id = $1 AND id = ANY($3::uuid[]) AND session_id = $2`, [
        session.organizationId,
        session.id,
        ids,
      ]);
    return new Set(rows.map((row) => row.id));
  }

  /**
   * A page of messages in conversation order (the cursor is the last seq returned), read in the
   * same statement as the session they belong to: null when there is no such session.
   *
   * The page also stops before the message that would take it past `maxBytes` (a message's size is
   * its content and attributes as PostgreSQL prints them, kept in `size_bytes` when it is written),
   * though its first message always comes, however large. The database sums the sizes of the next
   * `limit` + 1 messages and returns only those that fit: the server never receives more than the page.
   */
  async listMessages(
    sessionId: string,
    organizationId: string,
    query: { role?: MessageRole; cursor?: string; limit: number; maxBytes: number; newestFirst?: boolean },
  ): Promise<{ session: Pick<SessionEntity, 'organizationId' | 'ownerId' | 'computerId'>; page: Page<MessageSummary> } | null> {
    // Each order has its own cursors: a position in one is no position in the other.
    const list = query.newestFirst ? `messages-newest:${sessionId}` : `messages:${sessionId}`;
    // Oldest first walks up from after the cursor's seq; newest first walks down from before it.
    let fromSeq = query.newestFirst ? 2_147_483_647 : 0;
    if (query.cursor !== undefined) {
      fromSeq = decodeCursor(list, query.cursor, ['number'])[0] as number;
      if (fromSeq < 0 || fromSeq > 2_147_483_647) throw invalidCursor();
    }
    const values: unknown[] = [sessionId, organizationId, fromSeq, query.limit, query.maxBytes];
    const [step, direction] = query.newestFirst ? ['<', 'DESC'] : ['>', 'ASC'];
    const roleFilter = query.role ? `AND m.role = $${values.push(query.role)}` : '';
    // One index scan: the next `limit` + 1 messages with their running size; the database keeps
    // those that fit (their content is read only for them), and `walked` says whether there is more.
    const rows = await this.sql.query<MessageSummaryRow & { session_owner_id: string; session_computer_id: string | null; walked: number }>(
      `messages.list${query.role ? '.role' : ''}${query.newestFirst ? '.newest' : ''}`,
      `SELECT s.owner_id AS session_owner_id, s.computer_id AS session_computer_id, m.*
       FROM sessions s
       LEFT JOIN LATERAL (
         SELECT * FROM (
           SELECT w.*, count(*) OVER ()::int AS walked FROM (
             SELECT ${MESSAGE_VIEW_COLUMNS}, row_number() OVER (ORDER BY m.seq ${direction}) AS n, sum(m.size_bytes) OVER (ORDER BY m.seq ${direction}) AS total
             FROM messages m WHERE m.organization_id = s.organization_id AND m.session_id = s.id AND m.seq ${step} $3 ${roleFilter} ORDER BY m.seq ${direction} LIMIT $4 + 1
           ) w
         ) w
         WHERE w.n <= $4 AND (w.n = 1 OR w.total <= $5)
       ) m ON true
       WHERE s.id = $1 AND s.organization_id = $2`,
      values,
    );
    if (rows.length === 0) return null;
    const session = { organizationId, ownerId: rows[0].session_owner_id, computerId: rows[0].session_computer_id };
    const items = rows
      .filter((row) => row.id !== null)
      .map(toMessageSummary)
      .sort((a, b) => (query.newestFirst ? b.seq - a.seq : a.seq - b.seq));
    // The walk went one message past the page when there is more: past the limit, or past the budget.
    const hasMore = rows[0].walked > items.length;
    return { session, page: { items, pagination: { hasMore, nextCursor: hasMore ? encodeCursor(list, [items[items.length - 1].seq]) : null } } };
  }

  /**
   * Adds a user message in one statement: locks the session, numbers the message, moves the
   * status and the work queue, and inserts it with its analytics facts. The time is taken under the lock and never goes
   * backwards, so message times follow conversation order even with concurrent writers.
   */
  /**
   * Adds a user message in one statement, with its events (`message.added`, and
   * `session.status_changed` when the status moves): without a transaction of the caller's, the
   * command is this one statement. An archived session takes none: null, as for an unknown one.
   */
  async addUserMessage(
    input: {
      sessionId: string;
      organizationId: string;
      messageId: string;
      computerId: string | null;
      authorId: string;
      source: string;
      content: ContentBlock[];
      actor: EventActor;
    },
    manager: EntityManager,
  ): Promise<SessionChange | null> {
    const events = this.events.statementEvents(
      8,
      input.actor,
      {
        type: 'message.added',
        from: 's',
        organizationId: 's.organization_id',
        sessionId: 's.id',
        occurredAt: 's.updated_at',
        data: { sessionId: 's.id', messageId: '$3::uuid', role: `'user'`, authorId: '$6::uuid', computerId: 's.work_computer_id' },
      },
      {
        type: 'session.status_changed',
        from: 's WHERE s.status <> s.previous_status',
        organizationId: 's.organization_id',
        sessionId: 's.id',
        occurredAt: 's.updated_at',
        data: { sessionId: 's.id', from: 's.previous_status', to: 's.status' },
      },
    );
    const rows = await this.sql.in(manager).query<SessionRow & { previous_status: SessionStatus; previous_last_message_id: string | null }>(
      'messages.addUser',
      `WITH old AS (
         SELECT id, status, last_message_id FROM sessions WHERE id = $1 AND organization_id = $2 AND NOT (settings ? 'archivedAt') FOR UPDATE
       ), s AS (
         UPDATE sessions s SET
           message_count = s.message_count + 1,
           last_message_id = $3,
           last_user_seq = s.message_count + 1,
           updated_at = GREATEST(s.updated_at, date_trunc('milliseconds', clock_timestamp())),
           status = ${statusAfterSql(SessionTrigger.UserMessageAdded, 's.status')},
           pending_since = CASE WHEN s.status = 'running' THEN s.pending_since
                                ELSE COALESCE(s.pending_since, GREATEST(s.updated_at, date_trunc('milliseconds', clock_timestamp()))) END,
           work_computer_id = COALESCE($4::uuid, s.computer_id)
         FROM old WHERE s.organization_id = $2 AND s.id = old.id
         RETURNING s.*, old.status AS previous_status, old.last_message_id AS previous_last_message_id
       ), inserted AS (
         INSERT INTO messages (organization_id, id, session_id, seq, role, parent_id, user_message_source, author_id, content, attributes, created_at, updated_at)
         SELECT s.organization_id, $3, s.id, s.message_count, 'user', s.previous_last_message_id, $5, $6, $7::jsonb, '{}'::jsonb, s.updated_at, s.updated_at FROM s
       ), ${events.sql}
       SELECT ${SESSION_COLUMNS}, s.previous_status, s.previous_last_message_id FROM s`,
      [input.sessionId, input.organizationId, input.messageId, input.computerId, input.source, input.authorId, JSON.stringify(input.content), ...events.params],
    );
    const row = rows[0];
    if (!row) return null;
    this.events.written(manager);
    return { session: toSession(row), previousStatus: row.previous_status, previousLastMessageId: row.previous_last_message_id };
  }

  /** Appends a server-written message (a provisioning log line) in one statement; the status stays. */
  async appendServerMessage(
    manager: EntityManager,
    input: { sessionId: string; organizationId: string; messageId: string; role: MessageRole; content: ContentBlock[] },
  ): Promise<number | null> {
    const rows = await this.sql.in(manager).query<{ message_count: number }>(
      'messages.appendServer',
      `WITH old AS (
         SELECT id, last_message_id FROM sessions WHERE id = $1 AND organization_id = $2 FOR UPDATE
       ), s AS (
         UPDATE sessions s SET
           message_count = s.message_count + 1,
           last_message_id = $3,
           updated_at = GREATEST(s.updated_at, date_trunc('milliseconds', clock_timestamp()))
         FROM old WHERE s.organization_id = $2 AND s.id = old.id
         RETURNING s.organization_id, s.id, s.message_count, s.updated_at, old.last_message_id AS previous_last_message_id
       ), inserted AS (
         INSERT INTO messages (organization_id, id, session_id, seq, role, parent_id, user_message_source, author_id, content, attributes, created_at, updated_at)
         SELECT s.organization_id, $3, s.id, s.message_count, $4, s.previous_last_message_id, NULL, NULL, $5::jsonb, '{}'::jsonb, s.updated_at, s.updated_at FROM s
       )
       SELECT s.message_count FROM s`,
      [input.sessionId, input.organizationId, input.messageId, input.role, JSON.stringify(input.content)],
    );
    return rows[0]?.message_count ?? null;
  }

  /**
   * A turn's user messages, oldest first, within `maxBytes` (sized as in listMessages; the first
   * always comes), and the cursor of the conversation list after the last one when more are left.
   */
  async userMessagesAfter(
    manager: EntityManager,
    session: SessionKey,
    afterSeq: number,
    maxBytes: number,
  ): Promise<{ messages: MessageEntity[]; nextCursor: string | null }> {
    const rows = await this.sql.in(manager).query<MessageRow & { pending: number }>(
      'messages.userAfter',
      `WITH sized AS (
         SELECT m.seq, row_number() OVER (ORDER BY m.seq) AS n, sum(m.size_bytes) OVER (ORDER BY m.seq) AS total
         FROM messages m WHERE m.session_id = $1 AND m.role = 'user' AND m.seq > $2 AND m.organization_id = $4
       )
       SELECT ${MESSAGE_COLUMNS}, (SELECT count(*) FROM sized)::int AS pending
       FROM sized w JOIN messages m ON m.session_id = $1 AND m.seq = w.seq AND m.organization_id = $4
       WHERE w.n = 1 OR w.total <= $3
       ORDER BY m.seq`,
      [session.id, afterSeq, maxBytes, session.organizationId],
    );
    const messages = rows.map(toMessage);
    const more = rows.length > 0 && rows[0].pending > rows.length;
    return { messages, nextCursor: more ? encodeCursor(`messages:${session.id}`, [messages[messages.length - 1].seq]) : null };
  }

  /**
   * Locks the oldest work an agent may take, skipping rows other agents are taking: first a turn
   * whose lease ran out (its agent is gone), then waiting work.
   */
  async lockNextWork(manager: EntityManager, filter: WorkFilter, now: Date): Promise<SessionEntity | null> {
    const { common, params } = workCondition(filter);
    const queries: Array<[string, unknown[]]> = [
      [
        // An interrupted turn is not restarted: the turn sweep ends it.
        `${common} AND s.status = 'running' AND s.turn_interrupted_at IS NULL AND s.lease_expires_at < $${params.length + 1} ORDER BY s.lease_expires_at, s.id`,
        [...params, now],
      ],
      [`${common} AND s.status = 'pending' ORDER BY s.pending_since, s.id`, params],
    ];
    for (const [condition, values] of queries) {
      const rows = await this.sql
        .in(manager)
        .query<SessionRow>('sessions.nextWork', `SELECT ${SESSION_COLUMNS} FROM sessions s WHERE ${condition} LIMIT 1 FOR UPDATE SKIP LOCKED`, values);
      if (rows.length > 0) return toSession(rows[0]);
    }
    return null;
  }

  /**
   * When the first running turn of the queue runs out of lease (null for none): a long poll wakes
   * then to take it over, since nothing announces an expiry.
   */
  async nextLeaseExpiry(manager: EntityManager, filter: WorkFilter): Promise<Date | null> {
    const { common, params } = workCondition(filter);
    const [row] = await this.sql
      .in(manager)
      .query<{ at: Date | null }>(
        'sessions.nextLeaseExpiry',
        `SELECT min(s.lease_expires_at) AS at FROM sessions s WHERE ${common} AND s.status = 'running' AND s.turn_interrupted_at IS NULL`,
        params,
      );
    return row?.at ? new Date(row.at) : null;
  }

  /** Starts a turn on a locked session: running, its user messages so far handed out. */
  async startTurn(
    manager: EntityManager,
    session: SessionEntity,
    turn: { turnId: string; turnBaseSeq: number; leaseExpiresAt: Date; now: Date; computerId: string | null },
  ): Promise<SessionEntity> {
    const [row] = await this.sql.in(manager).query<SessionRow>(
      'sessions.startTurn',
      `UPDATE sessions s SET status = 'running', turn_id = $2, turn_computer_id = $6, turn_base_seq = $3, claimed_seq = s.last_user_seq,
         lease_expires_at = $4, pending_since = NULL, updated_at = GREATEST(s.updated_at, $5), turn_interrupted_at = NULL, turn_interrupted_by = NULL
       WHERE s.organization_id = $7 AND s.id = $1 RETURNING ${SESSION_COLUMNS}`,
      [session.id, turn.turnId, turn.turnBaseSeq, turn.leaseExpiresAt, turn.now, turn.computerId, session.organizationId],
    );
    return toSession(row);
  }

  /** Locks a session whose running turn is `turnId`; null when that turn is not the running one. */
  async lockTurn(manager: EntityManager, sessionId: string, organizationId: string, turnId: string): Promise<SessionEntity | null> {
    const rows = await this.sql.in(manager).query<SessionRow>(
      'sessions.lockTurn',
      `SELECT ${SESSION_COLUMNS} FROM sessions s
       WHERE s.id = $1 AND s.organization_id = $2 AND s.turn_id = $3 AND s.status = 'running' FOR UPDATE`,
      [sessionId, organizationId, turnId],
    );
    return rows.length > 0 ? toSession(rows[0]) : null;
  }

  /**
   * Renews a turn's lease (not a change clients see, so `updated_at` stays); an interrupted turn's
   * lease is not renewed. Returns the lease in force.
   */
  async extendLease(manager: EntityManager, session: SessionKey, leaseExpiresAt: Date): Promise<Date> {
    const [row] = await this.sql
      .in(manager)
      .query<{ lease_expires_at: number }>(
        'sessions.extendLease',
        `UPDATE sessions s SET lease_expires_at = ${RENEWED_LEASE('$2')} WHERE s.organization_id = $3 AND s.id = $1 RETURNING ${ms('s.lease_expires_at')}`,
        [session.id, leaseExpiresAt, session.organizationId],
      );
    return new Date(row.lease_expires_at);
  }

  /**
   * Marks a locked session's running turn interrupted by `actor`; its lease then runs out at
   * `lapsesAt` at the latest, which heartbeats no longer push back.
   */
  async interruptTurn(manager: EntityManager, session: SessionKey, input: { actor: EventActor; now: Date; lapsesAt: Date }): Promise<SessionEntity> {
    const [row] = await this.sql.in(manager).query<SessionRow>(
      'sessions.interruptTurn',
      `UPDATE sessions s SET turn_interrupted_at = $2, turn_interrupted_by = $3, lease_expires_at = LEAST(s.lease_expires_at, $4),
         updated_at = GREATEST(s.updated_at, $2)
       WHERE s.organization_id = $5 AND s.id = $1 RETURNING ${SESSION_COLUMNS}`,
      [session.id, input.now, JSON.stringify(input.actor), input.lapsesAt, session.organizationId],
    );
    return toSession(row);
  }

  /** Locks interrupted turns whose lease ran out (their agent did not end them), skipping rows others hold. */
  async lockLapsedInterruptedTurns(manager: EntityManager, now: Date, limit: number): Promise<SessionEntity[]> {
    const rows = await this.sql.in(manager).query<SessionRow>(
      'sessions.lapsedInterrupted',
      `SELECT ${SESSION_COLUMNS} FROM sessions s
       WHERE s.status = 'running' AND s.lease_expires_at < $1 AND s.turn_interrupted_at IS NOT NULL
       ORDER BY s.lease_expires_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
      [now, limit],
    );
    return rows.map(toSession);
  }

  async insertToolApproval(manager: EntityManager, a: ToolApprovalEntity): Promise<void> {
    await this.sql.in(manager).query(
      'toolApprovals.insert',
      `WITH counted AS (UPDATE sessions SET pending_tool_approvals = pending_tool_approvals + 1 WHERE organization_id = $2 AND id = $3)
       INSERT INTO tool_approvals (id, organization_id, session_id, turn_id, tool_name, tool_call_id, summary, input, status, requested_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [a.id, a.organizationId, a.sessionId, a.turnId, a.toolName, a.toolCallId, a.summary, JSON.stringify(a.input), a.status, a.requestedAt, a.expiresAt],
    );
  }

  /** One approval of a session of the organization (locked when asked). */
  async findToolApproval(
    sessionId: string,
    organizationId: string,
    approvalId: string,
    manager?: EntityManager,
    lock = false,
  ): Promise<ToolApprovalEntity | null> {
    const rows = await this.sql
      .in(manager)
      .query<ToolApprovalRow>(
        lock ? 'toolApprovals.findForUpdate' : 'toolApprovals.find',
        `SELECT ${APPROVAL_COLUMNS} FROM tool_approvals a WHERE a.id = $1 AND a.session_id = $2 AND a.organization_id = $3${lock ? ' FOR UPDATE' : ''}`,
        [approvalId, sessionId, organizationId],
      );
    return rows.length > 0 ? toToolApproval(rows[0]) : null;
  }

  /** The session's approvals waiting for an answer, oldest first (at most `limit`). */
  async pendingToolApprovals(session: SessionKey, limit: number, manager?: EntityManager): Promise<ToolApprovalEntity[]> {
    const rows = await this.sql.in(manager).query<ToolApprovalRow>(
      'toolApprovals.pending',
      `SELECT ${APPROVAL_COLUMNS} FROM tool_approvals a
         WHERE a.session_id = $1 AND a.organization_id = $3 AND a.status = 'pending' ORDER BY a.requested_at, a.id LIMIT $2`,
      [session.id, limit, session.organizationId],
    );
    return rows.map(toToolApproval);
  }

  /** Locks a turn's approvals still waiting (to cancel them when the turn ends). */
  async lockPendingToolApprovalsOfSession(manager: EntityManager, session: SessionKey): Promise<ToolApprovalEntity[]> {
    const rows = await this.sql.in(manager).query<ToolApprovalRow>(
      'toolApprovals.pendingForUpdate',
      `SELECT ${APPROVAL_COLUMNS} FROM tool_approvals a
         WHERE a.session_id = $1 AND a.organization_id = $2 AND a.status = 'pending' ORDER BY a.requested_at, a.id FOR UPDATE`,
      [session.id, session.organizationId],
    );
    return rows.map(toToolApproval);
  }

  /** Approvals still pending past their timeout, oldest first (callers lock each, session first). */
  async dueToolApprovals(now: Date, limit: number): Promise<ToolApprovalEntity[]> {
    const rows = await this.sql.query<ToolApprovalRow>(
      'toolApprovals.due',
      `SELECT ${APPROVAL_COLUMNS} FROM tool_approvals a WHERE a.status = 'pending' AND a.expires_at <= $1 ORDER BY a.expires_at LIMIT $2`,
      [now, limit],
    );
    return rows.map(toToolApproval);
  }

  /** Gives a pending approval its final status, and takes it off the session's count. */
  async resolveToolApproval(
    manager: EntityManager,
    approval: ToolApprovalEntity,
    outcome: { status: ToolApprovalStatus; message: string | null; at: Date; by: EventActor | null },
  ): Promise<ToolApprovalEntity> {
    const [row] = await this.sql.in(manager).query<ToolApprovalRow>(
      'toolApprovals.resolve',
      `WITH counted AS (UPDATE sessions SET pending_tool_approvals = GREATEST(pending_tool_approvals - 1, 0) WHERE organization_id = $7 AND id = $6)
       UPDATE tool_approvals a SET status = $2, message = $3, resolved_at = $4, resolved_by = $5
       WHERE a.organization_id = $7 AND a.id = $1 AND a.status = 'pending' RETURNING ${APPROVAL_COLUMNS}`,
      [approval.id, outcome.status, outcome.message, outcome.at, outcome.by ? JSON.stringify(outcome.by) : null, approval.sessionId, approval.organizationId],
    );
    return toToolApproval(row);
  }

  async endTurn(manager: EntityManager, session: SessionKey, end: { status: SessionStatus; now: Date; activeTimeMs: number }): Promise<SessionEntity> {
    const [row] = await this.sql.in(manager).query<SessionRow>(
      'sessions.endTurn',
      `UPDATE sessions s SET status = $2::varchar, turn_id = NULL, turn_computer_id = NULL, lease_expires_at = NULL, updated_at = GREATEST(s.updated_at, $3),
         turn_interrupted_at = NULL, turn_interrupted_by = NULL,
         completed_at = CASE WHEN $2::varchar = 'idle' THEN GREATEST(s.updated_at, $3) ELSE s.completed_at END,
         pending_since = CASE WHEN $2::varchar = 'pending' THEN (
           SELECT min(m.created_at) FROM messages m WHERE m.organization_id = s.organization_id AND m.session_id = s.id AND m.seq > s.claimed_seq AND m.role = 'user'
         ) ELSE NULL END,
         settings = CASE WHEN $4::bigint > 0
           THEN jsonb_set(s.settings, '{assistantActiveTimeMs}', to_jsonb(COALESCE((s.settings->>'assistantActiveTimeMs')::bigint, 0) + $4::bigint))
           ELSE s.settings END
       WHERE s.organization_id = $5 AND s.id = $1 RETURNING ${SESSION_COLUMNS}`,
      [session.id, end.status, end.now, end.activeTimeMs, session.organizationId],
    );
    return toSession(row);
  }

  /** Adds a usage report to the session's `tokenUsage` and to the day's per-user, per-model totals. */
  async addTokenUsage(
    manager: EntityManager,
    input: {
      session: SessionEntity;
      model: string;
      usage: TokenUsage;
      /** The provider and API the model was reached with: they lock a session that has no lock yet. */
      locks: { provider: string | null; api: string | null };
      day: string;
      leaseExpiresAt: Date;
      now: Date;
    },
  ): Promise<SessionEntity> {
    const u = input.usage;
    const [row] = await this.sql.in(manager).query<SessionRow>(
      'sessions.addTokenUsage',
      `UPDATE sessions s SET updated_at = GREATEST(s.updated_at, $7), lease_expires_at = ${RENEWED_LEASE('$8')},
         settings = jsonb_set(s.settings, '{tokenUsage}', jsonb_build_object(
           'inputTokens', COALESCE((s.settings->'tokenUsage'->>'inputTokens')::bigint, 0) + $2,
           'outputTokens', COALESCE((s.settings->'tokenUsage'->>'outputTokens')::bigint, 0) + $3,
           'cacheCreationTokens', COALESCE((s.settings->'tokenUsage'->>'cacheCreationTokens')::bigint, 0) + $4,
           'cacheReadTokens', COALESCE((s.settings->'tokenUsage'->>'cacheReadTokens')::bigint, 0) + $5,
           'thinkingTokens', COALESCE((s.settings->'tokenUsage'->>'thinkingTokens')::bigint, 0) + $6))
           || CASE WHEN $10::text IS NULL OR s.settings ? 'providerLock' THEN '{}'::jsonb
                   ELSE jsonb_build_object('providerLock', $10::text, 'providerLockTimestamp', to_char($7::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) END
           || CASE WHEN $11::text IS NULL OR s.settings ? 'apiProviderLock' THEN '{}'::jsonb ELSE jsonb_build_object('apiProviderLock', $11::text) END
       WHERE s.organization_id = $9 AND s.id = $1 RETURNING ${SESSION_COLUMNS}`,
      [
        input.session.id,
        u.inputTokens,
        u.outputTokens,
        u.cacheCreationTokens,
        u.cacheReadTokens,
        u.thinkingTokens,
        input.now,
        input.leaseExpiresAt,
        input.session.organizationId,
        input.locks.provider,
        input.locks.api,
      ],
    );
    await this.addDailyUsage(manager, {
      organizationId: input.session.organizationId,
      day: input.day,
      userId: input.session.ownerId,
      model: input.model,
      usage: u,
    });
    return toSession(row);
  }

  /** Adds usage to the day's per-user, per-model totals. */
  async addDailyUsage(manager: EntityManager, input: { organizationId: string; day: string; userId: string; model: string; usage: TokenUsage }): Promise<void> {
    const u = input.usage;
    await this.sql.in(manager).query(
      'tokenUsage.add',
      `INSERT INTO token_usage_daily AS t (organization_id, day, user_id, model, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, thinking_tokens)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (organization_id, day, user_id, model) DO UPDATE SET
         input_tokens = t.input_tokens + EXCLUDED.input_tokens,
         output_tokens = t.output_tokens + EXCLUDED.output_tokens,
         cache_creation_tokens = t.cache_creation_tokens + EXCLUDED.cache_creation_tokens,
         cache_read_tokens = t.cache_read_tokens + EXCLUDED.cache_read_tokens,
         thinking_tokens = t.thinking_tokens + EXCLUDED.thinking_tokens`,
      [input.organizationId, input.day, input.userId, input.model, u.inputTokens, u.outputTokens, u.cacheCreationTokens, u.cacheReadTokens, u.thinkingTokens],
    );
  }

  /** The owners of those of `ids` that are sessions of the organization. */
  async sessionOwners(organizationId: string, ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await this.sql.query<{ id: string; owner_id: string }>(
      'sessions.owners',
      `SELECT s.id, s.owner_id FROM sessions s WHERE s.organization_id = $1 AND s.id = ANY($2::uuid[])`,
      [organizationId, ids],
    );
    return new Map(rows.map((row) => [row.id, row.owner_id]));
  }

  /** Those of `ids` that are messages of the organization's sessions, by id. */
  async messagesByIds(organizationId: string, ids: string[]): Promise<Map<string, MessageSummary>> {
    if (ids.length === 0) return new Map();
    const rows = await this.sql.query<MessageSummaryRow>(
      'messages.byIds',
      `SELECT ${MESSAGE_VIEW_COLUMNS} FROM messages m WHERE m.organization_id = $1 AND m.id = ANY($2::uuid[])`,
      [organizationId, ids],
    );
    return new Map(rows.map((row) => [row.id, toMessageSummary(row)]));
  }

  async hasSessionsBefore(organizationId: string, before: Date): Promise<boolean> {
    const rows = await this.sql.query('sessions.anyBefore', `SELECT 1 FROM sessions WHERE organization_id = $1 AND created_at < $2 LIMIT 1`, [
      organizationId,
      before,
    ]);
    return rows.length > 0;
  }

  /** Stores a whole past conversation: the session row (with its counters) and its messages. */
  async importSession(manager: EntityManager, session: SessionEntity, messages: MessageEntity[]): Promise<void> {
    await this.insertSession(manager, session);
    if (messages.length > 0) await this.insertMessages(manager, messages);
    await this.sql.in(manager).query(
      'sessions.imported',
      `UPDATE sessions SET message_count = $2, last_message_id = $3, last_user_seq = $4, claimed_seq = $4, completed_at = $5, updated_at = $6
         WHERE organization_id = $7 AND id = $1`,
      [session.id, session.messageCount, session.lastMessageId, session.lastUserSeq, session.completedAt, session.updatedAt, session.organizationId],
    );
  }

  async messagesWithSessions(manager: EntityManager, organizationId: string, messageIds: string[]): Promise<MessageWithSession[]> {
    const rows = await this.sql.in(manager).query<{
      id: string;
      role: MessageRole;
      user_message_source: string | null;
      author_id: string | null;
      content: ContentBlock[];
      attributes: MessageAttributes;
      created_at: number;
      session_id: string;
      owner_id: string;
      settings: StoredSessionSettings;
    }>(
      'messages.withSessions',
      `SELECT m.id, m.role, m.user_message_source, m.author_id, m.content, m.attributes, ${ms('m.created_at')},
              s.id AS session_id, s.owner_id, s.settings
       FROM messages m JOIN sessions s ON s.organization_id = m.organization_id AND s.id = m.session_id
       WHERE m.organization_id = $1 AND m.id = ANY($2::uuid[])
       ORDER BY m.session_id, m.seq`,
      [organizationId, messageIds],
    );
    return rows.map((row) => ({
      session: { id: row.session_id, organizationId, ownerId: row.owner_id, settings: row.settings },
      message: {
        id: row.id,
        role: row.role,
        userMessageSource: row.user_message_source,
        authorId: row.author_id,
        content: row.content,
        attributes: row.attributes,
        createdAt: new Date(row.created_at),
      },
    }));
  }

  /**
   * An agent asked for work in a queue at `at` (see AgentPresence). The organization's queues no
   * agent asked in for `forgetAfterMs` (a deleted computer's, a gone member's) are dropped at the same time.
   */
  async recordAgentClaim(
    organizationId: string,
    queue: { key: string; computerId: string | null; ownerId: string | null },
    at: Date,
    forgetAfterMs: number,
  ): Promise<void> {
    await this.sql.query(
      'agentPresence.seen',
      `WITH forgotten AS (DELETE FROM agent_presence WHERE organization_id = $1 AND queue <> $2 AND seen_at < $6)
       INSERT INTO agent_presence (organization_id, queue, computer_id, owner_id, seen_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (organization_id, queue) DO UPDATE SET seen_at = GREATEST(agent_presence.seen_at, EXCLUDED.seen_at)`,
      [organizationId, queue.key, queue.computerId, queue.ownerId, at, new Date(at.getTime() - forgetAfterMs)],
    );
  }

  /** The organization's queues an agent asked in since `since`. */
  async agentQueuesSeenSince(organizationId: string, since: Date): Promise<Array<{ computerId: string | null; ownerId: string | null }>> {
    const rows = await this.sql.query<{ computer_id: string | null; owner_id: string | null }>(
      'agentPresence.live',
      `SELECT computer_id, owner_id FROM agent_presence WHERE organization_id = $1 AND seen_at > $2`,
      [organizationId, since],
    );
    return rows.map((row) => ({ computerId: row.computer_id, ownerId: row.owner_id }));
  }

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }
}

function dateOf(ms: number | null): Date | null {
  return ms === null ? null : new Date(ms);
}

function toSummary(row: SummaryRow): SessionSummary {
  return {
    id: row.id,
    status: row.status,
    messageCount: row.message_count,
    title: row.title,
    computerId: row.computer_id,
    settings: row.settings,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    completedAt: dateOf(row.completed_at),
    ownerId: row.owner_id,
    workComputerId: row.work_computer_id,
    turnInterruptedAt: dateOf(row.turn_interrupted_at),
    pendingToolApprovals: row.pending_tool_approvals,
  };
}

function toSession(row: SessionRow): SessionEntity {
  return Object.assign(new SessionEntity(), toSummary(row), {
    organizationId: row.organization_id,
    lastMessageId: row.last_message_id,
    lastUserSeq: row.last_user_seq,
    claimedSeq: row.claimed_seq,
    pendingSince: dateOf(row.pending_since),
    turnBaseSeq: row.turn_base_seq,
    turnId: row.turn_id,
    turnComputerId: row.turn_computer_id,
    leaseExpiresAt: dateOf(row.lease_expires_at),
    turnInterruptedBy: row.turn_interrupted_by,
  });
}

function toToolApproval(row: ToolApprovalRow): ToolApprovalEntity {
  return Object.assign(new ToolApprovalEntity(), {
    id: row.id,
    organizationId: row.organization_id,
    sessionId: row.session_id,
    turnId: row.turn_id,
    toolName: row.tool_name,
    toolCallId: row.tool_call_id,
    summary: row.summary,
    input: row.input,
    status: row.status,
    message: row.message,
    requestedAt: new Date(row.requested_at),
    expiresAt: new Date(row.expires_at),
    resolvedAt: dateOf(row.resolved_at),
    resolvedBy: row.resolved_by,
  });
}

function toMessageSummary(row: MessageSummaryRow): MessageSummary {
  return {
    id: row.id,
    seq: row.seq,
    role: row.role,
    parentId: row.parent_id,
    userMessageSource: row.user_message_source,
    content: row.content,
    attributes: row.attributes,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

function toMessage(row: MessageRow): MessageEntity {
  return Object.assign(new MessageEntity(), toMessageSummary(row), { sessionId: row.session_id, authorId: row.author_id });
}

/** The queue of one claim scope: an organization's work routed to a computer (or unrouted), of one owner or any. */
export interface WorkFilter {
  organizationId: string;
  computerId: string | null;
  ownerId?: string;
  /** Only this session's work (a run an agent starts itself takes its own turn). */
  sessionId?: string;
}

function workCondition(filter: WorkFilter): { common: string; params: unknown[] } {
  const params: unknown[] = [filter.organizationId];
  const where = [`s.organization_id = $1`];
  if (filter.computerId) {
    params.push(filter.computerId);
    where.push(`s.work_computer_id = $${params.length}`);
  } else {
    where.push(`s.work_computer_id IS NULL`);
  }
  if (filter.ownerId) {
    params.push(filter.ownerId);
    where.push(`s.owner_id = $${params.length}`);
  }
  if (filter.sessionId) {
    params.push(filter.sessionId);
    where.push(`s.id = $${params.length}`);
  }
  return { common: where.join(' AND '), params };
}

import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { decodeCursor, encodeCursor, invalidCursor } from '../../platform/http/cursor';
import { Page, toPage } from '../../platform/http/pagination';
import { NewestFirst } from '../../platform/database/keyset';
import { DB_NOW, Params, Sql } from '../../platform/database/sql';
import { EventActor, EventLog } from '../../platform/events';
import { MessageEntity, SessionEntity } from './entities';
import { ContentBlock, MessageAttributes, MessageRole } from './domain/message';
import { ArchivedFilter, StoredSessionSettings } from './domain/session-settings';
import { SessionStatus, SessionTrigger, statusAfterSql } from './domain/session-status';
import { MessageSummary, ms, RENEWED_LEASE, Row, SessionChange, SessionKey, SessionShapes, SessionSummary, StoredMessage } from './session-rows';

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
 * The SQL of sessions and their messages (one aggregate: a message is written with its session's row locked). Hot
 * paths are single statements: adding messages takes the session's row lock, numbers the messages and moves the
 * status in one UPDATE.
 */
@Injectable()
export class SessionsRepository {
  static readonly sessionsOrder = new NewestFirst('sessions');

  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
    private readonly events: EventLog,
    private readonly shapes: SessionShapes,
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
      .query<Row>(
        lock ? 'sessions.findForUpdate' : 'sessions.find',
        `SELECT ${this.shapes.session.columns} FROM sessions s WHERE s.id = $1 AND s.organization_id = $2${lock ? ' FOR UPDATE' : ''}`,
        [id, organizationId],
      );
    return rows.length > 0 ? this.shapes.session.from(rows[0]) : null;
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
    const rows = await this.sql.query<Row>(
      `sessions.list.${variant}`,
      `SELECT ${this.shapes.summary.columns} FROM sessions s WHERE ${where.join(' AND ')} ORDER BY s.created_at DESC, s.id DESC LIMIT $2`,
      values,
    );
    return toPage(
      rows.map((row) => this.shapes.summary.from(row)),
      limit,
      (row) => SessionsRepository.sessionsOrder.cursorOf(row),
    );
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
   * deleting are skipped, not waited for. Returns how many were deleted. The batch is a materialized
   * CTE: as an `IN (...)` subquery, the planner may run it again for each outer row, and with SKIP
   * LOCKED each run picks other rows (one statement deleted 825 with a limit of 500). `updated_at` has
   * no index (every message changes it, and the row's update stays HOT without one): a session idle
   * since `before` was created before it, so the creation index bounds the scan, oldest first.
   */
  async deleteInactive(organizationId: string, before: Date, limit: number): Promise<number> {
    const rows = await this.sql.query<{ id: string }>(
      'sessions.deleteInactive',
      `WITH batch AS MATERIALIZED (
         SELECT id FROM sessions
         WHERE organization_id = $1 AND created_at < $2 AND updated_at < $2
           AND NOT (status = 'running' AND lease_expires_at > clock_timestamp())
         ORDER BY created_at
         LIMIT $3
         FOR UPDATE SKIP LOCKED)
       DELETE FROM sessions s USING batch WHERE s.organization_id = $1 AND s.id = batch.id
       RETURNING s.id`,
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
    const rows = await this.sql.in(manager).query<Row & { previous_status: SessionStatus; previous_last_message_id: string | null }>(
      'messages.reserveAgent',
      `WITH old AS (SELECT organization_id, id, status, last_message_id FROM sessions WHERE organization_id = $5 AND id = $1 FOR UPDATE)
       UPDATE sessions s SET
         message_count = s.message_count + $2,
         last_message_id = $3,
         updated_at = GREATEST(s.updated_at, ${DB_NOW}),
         lease_expires_at = ${RENEWED_LEASE('$4')}
       FROM old WHERE s.organization_id = old.organization_id AND s.id = old.id
       RETURNING ${this.shapes.session.columns}, old.status AS previous_status, old.last_message_id AS previous_last_message_id`,
      [input.session.id, input.count, input.lastMessageId, input.leaseExpiresAt, input.session.organizationId],
    );
    const row = rows[0];
    return { session: this.shapes.session.from(row), previousStatus: row.previous_status, previousLastMessageId: row.previous_last_message_id };
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
    const rows = await this.sql.query<Row & { session_owner_id: string; session_computer_id: string | null; walked: number }>(
      `messages.list${query.role ? '.role' : ''}${query.newestFirst ? '.newest' : ''}`,
      `SELECT s.owner_id AS session_owner_id, s.computer_id AS session_computer_id, m.*
       FROM sessions s
       LEFT JOIN LATERAL (
         SELECT * FROM (
           SELECT w.*, count(*) OVER ()::int AS walked FROM (
             SELECT ${this.shapes.messageView.columns}, row_number() OVER (ORDER BY m.seq ${direction}) AS n, sum(m.size_bytes) OVER (ORDER BY m.seq ${direction}) AS total
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
      .map((row) => this.shapes.messageView.from(row))
      .sort((a, b) => (query.newestFirst ? b.seq - a.seq : a.seq - b.seq));
    // The walk went one message past the page when there is more: past the limit, or past the budget.
    const hasMore = rows[0].walked > items.length;
    return { session, page: { items, pagination: { hasMore, nextCursor: hasMore ? encodeCursor(list, [items[items.length - 1].seq]) : null } } };
  }

  /**
   * Adds a user message in one statement, with its events (`message.added`, and
   * `session.status_changed` when the status moves): locks the session, numbers the message, moves the status and
   * the work queue, and inserts it. The time is taken under the lock and never goes backwards, so message times
   * follow conversation order even with concurrent writers. An archived session takes none: null, as for an unknown one;
   * with `ownerId`, so does another owner's session.
   */
  async addUserMessage(
    input: {
      sessionId: string;
      organizationId: string;
      /** Only a session of this owner (a member writes only to their own). */
      ownerId?: string;
      messageId: string;
      computerId: string | null;
      authorId: string;
      source: string;
      content: ContentBlock[];
      actor: EventActor;
    },
    manager: EntityManager,
  ): Promise<SessionChange | null> {
    const p = new Params();
    const sessionId = p.add(input.sessionId);
    const organizationId = p.add(input.organizationId);
    const messageId = p.add(input.messageId, 'uuid');
    const authorId = p.add(input.authorId, 'uuid');
    const statement = `WITH old AS (
         SELECT id, status, last_message_id FROM sessions WHERE id = ${sessionId} AND organization_id = ${organizationId} AND NOT (settings ? 'archivedAt')${
           input.ownerId !== undefined ? ` AND owner_id = ${p.add(input.ownerId, 'uuid')}` : ''
         } FOR UPDATE
       ), s AS (
         UPDATE sessions s SET
           message_count = s.message_count + 1,
           last_message_id = ${messageId},
           last_user_seq = s.message_count + 1,
           updated_at = GREATEST(s.updated_at, ${DB_NOW}),
           status = ${statusAfterSql(SessionTrigger.UserMessageAdded, 's.status')},
           pending_since = CASE WHEN s.status = 'running' THEN s.pending_since
                                ELSE COALESCE(s.pending_since, GREATEST(s.updated_at, ${DB_NOW})) END,
           work_computer_id = COALESCE(${p.add(input.computerId, 'uuid')}, s.computer_id)
         FROM old WHERE s.organization_id = ${organizationId} AND s.id = old.id
         RETURNING s.*, old.status AS previous_status, old.last_message_id AS previous_last_message_id
       ), inserted AS (
         INSERT INTO messages (organization_id, id, session_id, seq, role, parent_id, user_message_source, author_id, content, attributes, created_at, updated_at)
         SELECT s.organization_id, ${messageId}, s.id, s.message_count, 'user', s.previous_last_message_id, ${p.add(input.source)}, ${authorId},
                ${p.add(JSON.stringify(input.content), 'jsonb')}, '{}'::jsonb, s.updated_at, s.updated_at FROM s
       ), ${this.events.statementEvents(
         p,
         input.actor,
         {
           type: 'message.added',
           from: 's',
           organizationId: 's.organization_id',
           sessionId: 's.id',
           occurredAt: 's.updated_at',
           data: { sessionId: 's.id', messageId, role: `'user'`, authorId, computerId: 's.work_computer_id' },
         },
         {
           type: 'session.status_changed',
           from: 's WHERE s.status <> s.previous_status',
           organizationId: 's.organization_id',
           sessionId: 's.id',
           occurredAt: 's.updated_at',
           data: { sessionId: 's.id', from: 's.previous_status', to: 's.status' },
         },
       )}
       SELECT ${this.shapes.session.columns}, s.previous_status, s.previous_last_message_id FROM s`;
    const rows = await this.sql
      .in(manager)
      .query<Row & { previous_status: SessionStatus; previous_last_message_id: string | null }>('messages.addUser', statement, p.values);
    const row = rows[0];
    if (!row) return null;
    this.events.written(manager);
    return { session: this.shapes.session.from(row), previousStatus: row.previous_status, previousLastMessageId: row.previous_last_message_id };
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
           updated_at = GREATEST(s.updated_at, ${DB_NOW})
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
  ): Promise<{ messages: StoredMessage[]; nextCursor: string | null }> {
    const rows = await this.sql.in(manager).query<Row & { pending: number }>(
      'messages.userAfter',
      `WITH sized AS (
         SELECT m.seq, row_number() OVER (ORDER BY m.seq) AS n, sum(m.size_bytes) OVER (ORDER BY m.seq) AS total
         FROM messages m WHERE m.session_id = $1 AND m.role = 'user' AND m.seq > $2 AND m.organization_id = $4
       )
       SELECT ${this.shapes.message.columns}, (SELECT count(*) FROM sized)::int AS pending
       FROM sized w JOIN messages m ON m.session_id = $1 AND m.seq = w.seq AND m.organization_id = $4
       WHERE w.n = 1 OR w.total <= $3
       ORDER BY m.seq`,
      [session.id, afterSeq, maxBytes, session.organizationId],
    );
    const messages = rows.map((row) => this.shapes.message.from(row));
    const more = rows.length > 0 && rows[0].pending > rows.length;
    return { messages, nextCursor: more ? encodeCursor(`messages:${session.id}`, [messages[messages.length - 1].seq]) : null };
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
    const rows = await this.sql.query<Row>(
      'messages.byIds',
      `SELECT ${this.shapes.messageView.columns} FROM messages m WHERE m.organization_id = $1 AND m.id = ANY($2::uuid[])`,
      [organizationId, ids],
    );
    return new Map(rows.map((row) => [row.id as string, this.shapes.messageView.from(row)]));
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
      `UPDATE sessions SET message_count = $2, last_message_id = $3, last_user_seq = $4, claimed_seq = $4, completed_at = $5, updated_at = GREATEST(created_at, $6)
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

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }
}

import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Sql } from '../../platform/database/sql';
import { EventActor } from '../../platform/events';
import { SessionEntity } from './entities';
import { TokenUsage } from './domain/session-settings';
import { SessionStatus } from './domain/session-status';
import { ms, RENEWED_LEASE, Row, SessionKey, SessionShapes } from './session-rows';

/**
 * The SQL of the agent's side of a session's turn: the work queue, claims, leases, interrupts, the end of a turn and
 * its usage. These statements write the work-queue columns of the sessions table, under the session's row lock.
 */
@Injectable()
export class TurnsRepository {
  constructor(
    private readonly sql: Sql,
    private readonly shapes: SessionShapes,
  ) {}

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
        .query<Row>('sessions.nextWork', `SELECT ${this.shapes.session.columns} FROM sessions s WHERE ${condition} LIMIT 1 FOR UPDATE SKIP LOCKED`, values);
      if (rows.length > 0) return this.shapes.session.from(rows[0]);
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
    const [row] = await this.sql.in(manager).query<Row>(
      'sessions.startTurn',
      `UPDATE sessions s SET status = 'running', turn_id = $2, turn_computer_id = $6, turn_base_seq = $3, claimed_seq = s.last_user_seq,
         lease_expires_at = $4, pending_since = NULL, updated_at = GREATEST(s.updated_at, $5), turn_interrupted_at = NULL, turn_interrupted_by = NULL
       WHERE s.organization_id = $7 AND s.id = $1 RETURNING ${this.shapes.session.columns}`,
      [session.id, turn.turnId, turn.turnBaseSeq, turn.leaseExpiresAt, turn.now, turn.computerId, session.organizationId],
    );
    return this.shapes.session.from(row);
  }

  /** Locks a session whose running turn is `turnId`; null when that turn is not the running one. */
  async lockTurn(manager: EntityManager, sessionId: string, organizationId: string, turnId: string): Promise<SessionEntity | null> {
    const rows = await this.sql.in(manager).query<Row>(
      'sessions.lockTurn',
      `SELECT ${this.shapes.session.columns} FROM sessions s
       WHERE s.id = $1 AND s.organization_id = $2 AND s.turn_id = $3 AND s.status = 'running' FOR UPDATE`,
      [sessionId, organizationId, turnId],
    );
    return rows.length > 0 ? this.shapes.session.from(rows[0]) : null;
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
    const [row] = await this.sql.in(manager).query<Row>(
      'sessions.interruptTurn',
      `UPDATE sessions s SET turn_interrupted_at = $2, turn_interrupted_by = $3, lease_expires_at = LEAST(s.lease_expires_at, $4),
         updated_at = GREATEST(s.updated_at, $2)
       WHERE s.organization_id = $5 AND s.id = $1 RETURNING ${this.shapes.session.columns}`,
      [session.id, input.now, JSON.stringify(input.actor), input.lapsesAt, session.organizationId],
    );
    return this.shapes.session.from(row);
  }

  /** Locks interrupted turns whose lease ran out (their agent did not end them), skipping rows others hold. */
  async lockLapsedInterruptedTurns(manager: EntityManager, now: Date, limit: number): Promise<SessionEntity[]> {
    const rows = await this.sql.in(manager).query<Row>(
      'sessions.lapsedInterrupted',
      `SELECT ${this.shapes.session.columns} FROM sessions s
       WHERE s.status = 'running' AND s.lease_expires_at < $1 AND s.turn_interrupted_at IS NOT NULL
       ORDER BY s.lease_expires_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
      [now, limit],
    );
    return rows.map((row) => this.shapes.session.from(row));
  }

  /** Whether an interrupted turn's lease has run out and it is still running (one another transaction held, say). */
  async anyLapsedInterruptedTurn(manager: EntityManager, now: Date): Promise<boolean> {
    const rows = await this.sql
      .in(manager)
      .query<Row>(
        'sessions.anyLapsedInterrupted',
        `SELECT 1 FROM sessions s WHERE s.status = 'running' AND s.lease_expires_at < $1 AND s.turn_interrupted_at IS NOT NULL LIMIT 1`,
        [now],
      );
    return rows.length > 0;
  }

  async endTurn(manager: EntityManager, session: SessionKey, end: { status: SessionStatus; now: Date; activeTimeMs: number }): Promise<SessionEntity> {
    const [row] = await this.sql.in(manager).query<Row>(
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
       WHERE s.organization_id = $5 AND s.id = $1 RETURNING ${this.shapes.session.columns}`,
      [session.id, end.status, end.now, end.activeTimeMs, session.organizationId],
    );
    return this.shapes.session.from(row);
  }

  /** Moves the session's count of tool calls waiting for a person by `change` (never below zero). */
  async countPendingApprovals(manager: EntityManager, session: SessionKey, change: 1 | -1): Promise<void> {
    await this.sql
      .in(manager)
      .query(
        'sessions.countPendingApprovals',
        `UPDATE sessions SET pending_tool_approvals = GREATEST(pending_tool_approvals + $3, 0) WHERE organization_id = $1 AND id = $2`,
        [session.organizationId, session.id, change],
      );
  }

  /** Adds a usage report to the session's `tokenUsage` (the day's totals are TokenUsageRepository's) and renews the turn's lease. */
  async addTokenUsage(
    manager: EntityManager,
    input: {
      session: SessionEntity;
      model: string;
      usage: TokenUsage;
      /** The provider and API the model was reached with: they lock a session that has no lock yet. */
      locks: { provider: string | null; api: string | null };
      leaseExpiresAt: Date;
      now: Date;
    },
  ): Promise<SessionEntity> {
    const u = input.usage;
    const [row] = await this.sql.in(manager).query<Row>(
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
       WHERE s.organization_id = $9 AND s.id = $1 RETURNING ${this.shapes.session.columns}`,
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
    return this.shapes.session.from(row);
  }
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

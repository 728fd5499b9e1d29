import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AdvisoryLock } from '../../platform/database/advisory-locks';
import { Sql } from '../../platform/database/sql';
import { ActivityDay, DayRollup, FactCount, ProductivityDay, ToolsDay, UserDayMetrics } from './domain/day-rollup';
import { TokensRow } from './domain/token-rows';
import { Fact, FactKind } from './domain/facts';

/** A rolled-up day of the organization, as stored. */
export interface StoredDay {
  day: string;
  tools: ToolsDay;
  activity: ActivityDay;
  productivity: ProductivityDay;
}

/** A user's rolled-up day, as stored (the users endpoint adds the user's email). */
export interface StoredUserDay {
  userId: string;
  day: string;
  metrics: UserDayMetrics;
}

const DAY = `to_char(day, 'YYYY-MM-DD') AS day`;

/** All SQL of the Analytics module. */
@Injectable()
export class AnalyticsRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
  ) {}

  /** Stores facts in the caller's transaction, stamped with its transaction id (one statement however many). */
  async insertFacts(manager: EntityManager, organizationId: string, facts: Fact[]): Promise<void> {
    const column = (pick: (fact: Fact) => string | null | undefined) => facts.map((fact) => pick(fact) ?? null);
    await this.sql.in(manager).query(
      'analytics.insertFacts',
      `INSERT INTO analytics_facts (organization_id, day, user_id, session_id, kind, client, level, name, detail, command, txid)
       SELECT $1, f.day, f.user_id, f.session_id, f.kind, f.client, f.level, f.name, f.detail, f.command, pg_current_xact_id()::text::bigint
       FROM unnest($2::date[], $3::uuid[], $4::uuid[], $5::varchar[], $6::varchar[], $7::varchar[], $8::text[], $9::text[], $10::text[])
         AS f(day, user_id, session_id, kind, client, level, name, detail, command)`,
      [
        organizationId,
        column((fact) => fact.at.toISOString().slice(0, 10)),
        column((fact) => fact.userId),
        column((fact) => fact.sessionId),
        column((fact) => fact.kind),
        column((fact) => fact.client),
        column((fact) => fact.level),
        column((fact) => fact.name),
        column((fact) => fact.detail),
        column((fact) => fact.command),
      ],
    );
  }

  /**
   * Marks the days of facts written since the last look as dirty and moves the watermark, in one
   * statement (one snapshot): every transaction older than the snapshot's xmin has ended, so its
   * facts were seen now or before; of the younger ones, those the snapshot saw committed are not
   * looked at again (`seen`), the rest are next time. Returns how many days.
   */
  async markDirtyDays(): Promise<number> {
    return this.dataSource.transaction(async (manager) => {
      await this.sql.in(manager).query('analytics.lockWatermark', 'SELECT pg_advisory_xact_lock($1)', [AdvisoryLock.AnalyticsWatermark]);
      const rows = await this.sql.in(manager).query<{ marked: number }>(
        'analytics.markDirtyDays',
        `WITH state AS (SELECT watermark, seen FROM analytics_rollup_state WHERE id = 1),
         marked AS (
           INSERT INTO analytics_dirty_days (organization_id, day)
           SELECT DISTINCT f.organization_id, f.day FROM analytics_facts f, state
           WHERE f.txid >= state.watermark AND (state.seen IS NULL OR NOT pg_visible_in_snapshot(f.txid::text::xid8, state.seen::pg_snapshot))
           ON CONFLICT DO NOTHING RETURNING 1
         ), moved AS (
           UPDATE analytics_rollup_state
           SET watermark = pg_snapshot_xmin(pg_current_snapshot())::text::bigint, seen = pg_current_snapshot()::text WHERE id = 1
         )
         SELECT count(*)::int AS marked FROM marked`,
        [],
      );
      return rows[0].marked;
    });
  }

  /** Days (of all organizations) waiting for the rollup: dirty and before `today`. */
  async pendingDays(today: string): Promise<number> {
    const [row] = await this.sql.query<{ n: number }>('analytics.pendingDays', 'SELECT count(*)::int AS n FROM analytics_dirty_days WHERE day < $1', [today]);
    return row.n;
  }

  /**
   * Claims one dirty day before `today` (of one organization, or any), skipping days another
   * instance is rolling up; the claim is undone if the transaction fails.
   */
  async claimDirtyDay(manager: EntityManager, today: string, organizationId?: string): Promise<{ organizationId: string; day: string } | null> {
    const values: unknown[] = [today];
    const only = organizationId ? `AND organization_id = $${values.push(organizationId)}` : '';
    const [row] = await this.sql.in(manager).query<{ organization_id: string; day: string }>(
      `analytics.claimDirtyDay${organizationId ? '.organization' : ''}`,
      `DELETE FROM analytics_dirty_days WHERE (organization_id, day) IN (
         SELECT organization_id, day FROM analytics_dirty_days WHERE day < $1 ${only}
         ORDER BY organization_id, day LIMIT 1 FOR UPDATE SKIP LOCKED
       ) RETURNING organization_id, to_char(day, 'YYYY-MM-DD') AS day`,
      values,
    );
    return row ? { organizationId: row.organization_id, day: row.day } : null;
  }

  /** The day's facts counted per distinct combination, and the sessions that had messages. */
  async dayFacts(manager: EntityManager, organizationId: string, day: string): Promise<{ facts: FactCount[]; sessionsWithMessages: number }> {
    const facts = await this.sql.in(manager).query<FactCount & { n: number }>(
      'analytics.dayFacts',
      `SELECT user_id AS "userId", kind, client, level, name, detail, command, count(*)::int AS n
       FROM analytics_facts WHERE organization_id = $1 AND day = $2 AND kind <> $3
       GROUP BY user_id, kind, client, level, name, detail, command`,
      [organizationId, day, FactKind.TokenReport],
    );
    const [{ sessions }] = await this.sql.in(manager).query<{ sessions: number }>(
      'analytics.daySessions',
      `SELECT count(DISTINCT session_id)::int AS sessions FROM analytics_facts
       WHERE organization_id = $1 AND day = $2 AND kind IN ($3, $4)`,
      [organizationId, day, FactKind.UserMessage, FactKind.AssistantMessage],
    );
    return { facts, sessionsWithMessages: sessions };
  }

  /** Replaces the organization's rolled-up day (nothing stored when the day has no users). */
  async writeDay(manager: EntityManager, organizationId: string, day: string, rollup: DayRollup, tokens: TokensRow): Promise<void> {
    await this.sql
      .in(manager)
      .query('analytics.deleteUserDays', `DELETE FROM analytics_user_days WHERE organization_id = $1 AND day = $2`, [organizationId, day]);
    if (rollup.users.length === 0) {
      await this.sql.in(manager).query('analytics.deleteDay', `DELETE FROM analytics_days WHERE organization_id = $1 AND day = $2`, [organizationId, day]);
      return;
    }
    await this.sql.in(manager).query(
      'analytics.insertUserDays',
      `INSERT INTO analytics_user_days (organization_id, day, user_id, metrics, active, clients)
       SELECT $1, $2, u.user_id, u.metrics, u.active, u.clients
       FROM jsonb_to_recordset($3::jsonb) AS u(user_id uuid, metrics jsonb, active boolean, clients jsonb)`,
      [organizationId, day, JSON.stringify(rollup.users.map((u) => ({ user_id: u.userId, metrics: u.metrics, active: u.active, clients: u.clients })))],
    );
    await this.sql.in(manager).query(
      'analytics.upsertDay',
      `INSERT INTO analytics_days (organization_id, day, tools, activity, productivity, tokens, rolled_up_at)
       VALUES ($1, $2, $3, $4, $5, $6, now())
       ON CONFLICT (organization_id, day) DO UPDATE SET
         tools = EXCLUDED.tools, activity = EXCLUDED.activity, productivity = EXCLUDED.productivity, tokens = EXCLUDED.tokens,
         rolled_up_at = EXCLUDED.rolled_up_at`,
      [organizationId, day, JSON.stringify(rollup.tools), JSON.stringify(rollup.activity), JSON.stringify(rollup.productivity), JSON.stringify(tokens)],
    );
  }

  async days(organizationId: string, from: string, to: string): Promise<StoredDay[]> {
    return this.sql.query<StoredDay>(
      'analytics.days',
      `SELECT ${DAY}, tools, activity, productivity FROM analytics_days d WHERE organization_id = $1 AND day BETWEEN $2 AND $3 ORDER BY d.day`,
      [organizationId, from, to],
    );
  }

  /** The active users of each day in the range, with their clients (for DAU, WAU and MAU). */
  async activeUsers(organizationId: string, from: string, to: string): Promise<Array<{ day: string; userId: string; clients: string[] }>> {
    return this.sql.query(
      'analytics.activeUsers',
      `SELECT ${DAY}, user_id AS "userId", clients FROM analytics_user_days d
       WHERE organization_id = $1 AND day BETWEEN $2 AND $3 AND active ORDER BY d.day`,
      [organizationId, from, to],
    );
  }

  /**
   * Up to `limit` users with a rolled-up day in the range, after `afterUserId`, in id order. The
   * bound is a plain comparison (no `IS NULL OR`) so a generic plan still starts the index scan at it.
   */
  async usersWithDays(organizationId: string, from: string, to: string, afterUserId: string | null, limit: number): Promise<string[]> {
    const rows = await this.sql.query<{ user_id: string }>(
      'analytics.usersWithDays',
      `SELECT DISTINCT user_id FROM analytics_user_days
       WHERE organization_id = $1 AND day BETWEEN $2 AND $3 AND user_id > COALESCE($4::uuid, '00000000-0000-0000-0000-000000000000')
       ORDER BY user_id LIMIT $5`,
      [organizationId, from, to, afterUserId, limit],
    );
    return rows.map((row) => row.user_id);
  }

  /** The users' rolled-up days in the range, by user then day. */
  async userDays(organizationId: string, userIds: string[], from: string, to: string): Promise<StoredUserDay[]> {
    if (userIds.length === 0) return [];
    return this.sql.query<StoredUserDay>(
      'analytics.userDays',
      `SELECT d.user_id AS "userId", to_char(d.day, 'YYYY-MM-DD') AS day, d.metrics FROM analytics_user_days d
       WHERE d.organization_id = $1 AND d.user_id = ANY($2::uuid[]) AND d.day BETWEEN $3 AND $4
       ORDER BY d.user_id, d.day`,
      [organizationId, userIds, from, to],
    );
  }

  /** The tokens rows of the range's rolled-up days, as JSON text (days rolled up before they were kept have none). */
  async tokenDays(organizationId: string, from: string, to: string): Promise<Array<{ day: string; tokens: string }>> {
    return this.sql.query(
      'analytics.tokenDays',
      `SELECT ${DAY}, tokens FROM analytics_days d WHERE organization_id = $1 AND day BETWEEN $2 AND $3 AND tokens IS NOT NULL`,
      [organizationId, from, to],
    );
  }

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }
}

import type { SqlExecutor } from '../database/sql';

/** What a ledger answers when asked for part of a window's budget. */
export interface Grant {
  /** How many requests the asker may serve (0: the budget is spent). */
  granted: number;
  /** How much of the budget all askers together have taken, this grant included. */
  taken: number;
}

/** Where one client's budget per window is kept: this process, or the database all instances share. */
export interface BudgetLedger {
  /** How much to ask for at once, for a limit of `max`. */
  blockOf(max: number): number;
  take(key: string, windowStart: number, wanted: number, max: number): Promise<Grant>;
  /** Forgets windows that ended before `before`. */
  forget(before: number): Promise<void>;
}

/** One instance (the embedded database): the whole budget is granted at once and counted here. */
export class MemoryLedger implements BudgetLedger {
  blockOf(max: number): number {
    return max;
  }

  take(_key: string, _windowStart: number, wanted: number, max: number): Promise<Grant> {
    const granted = Math.min(wanted, max);
    return Promise.resolve({ granted, taken: granted });
  }

  forget(): Promise<void> {
    return Promise.resolve();
  }
}

/** The share of a limit an instance takes at a time: few round trips, little left stranded on idle instances. */
export const BLOCK_SHARE = 0.05;

/**
 * Several instances on one PostgreSQL: each takes blocks of a window's budget with one upsert,
 * and the database never grants more than the limit in total. The upsert adds the whole block
 * while the budget lasts; the part of it past the limit is not granted.
 */
export class PostgresLedger implements BudgetLedger {
  constructor(private readonly sql: SqlExecutor) {}

  blockOf(max: number): number {
    return Math.max(1, Math.ceil(max * BLOCK_SHARE));
  }

  async take(key: string, windowStart: number, wanted: number, max: number): Promise<Grant> {
    const rows = await this.sql.query<{ used: number }>(
      'rateLimits.take',
      `INSERT INTO rate_limit_windows AS w (key, window_start, used) VALUES ($1, $2, $3)
       ON CONFLICT (key, window_start) DO UPDATE SET used = w.used + EXCLUDED.used WHERE w.used < $4
       RETURNING used`,
      [key, new Date(windowStart), wanted, max],
    );
    if (rows.length === 0) return { granted: 0, taken: max };
    const taken = Number(rows[0].used);
    const granted = wanted - Math.max(0, taken - max);
    return { granted, taken: Math.min(taken, max) };
  }

  async forget(before: number): Promise<void> {
    await this.sql.query('rateLimits.forget', `DELETE FROM rate_limit_windows WHERE window_start < $1`, [new Date(before)]);
  }
}

import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Sql } from '../../platform/database/sql';
import { TokenUsage } from './domain/session-settings';

/** A user's tokens of one UTC day with one model (the user is the session's owner). */
export interface DailyTokenUsage {
  userId: string;
  model: string;
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
  thinking: number;
}

/** The SQL of the day's token totals per user and model (token_usage_daily): written by turns and imports, read by other modules through TokenUsageReader. */
@Injectable()
export class TokenUsageRepository {
  constructor(private readonly sql: Sql) {}

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

  /** The organization's usage of the day, one row per user and model (served by the table's primary key). */
  async ofDay(organizationId: string, day: string, manager?: EntityManager): Promise<DailyTokenUsage[]> {
    const rows = await this.sql.in(manager).query<Record<string, string>>(
      'tokenUsage.ofDay',
      `SELECT user_id AS "userId", model, input_tokens AS input, output_tokens AS output, cache_creation_tokens AS "cacheWrite",
              cache_read_tokens AS "cacheRead", thinking_tokens AS thinking
       FROM token_usage_daily WHERE organization_id = $1 AND day = $2`,
      [organizationId, day],
    );
    // bigint columns arrive as strings; usage stays far below 2^53.
    return rows.map((row) => ({
      userId: row.userId,
      model: row.model,
      input: Number(row.input),
      output: Number(row.output),
      cacheWrite: Number(row.cacheWrite),
      cacheRead: Number(row.cacheRead),
      thinking: Number(row.thinking),
    }));
  }
}

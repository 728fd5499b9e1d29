import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** One day's token usage of one user with one model (the daily fact rows Sessions writes with each usage report). */
export interface TokenUsageRow {
  day: string;
  userId: string;
  userEmail: string | null;
  model: string;
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
  thinking: number;
}

/** All SQL of the Analytics module. */
@Injectable()
export class AnalyticsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async tokenUsage(organizationId: string, from: string, to: string): Promise<TokenUsageRow[]> {
    const rows: Array<Record<string, string | null>> = await this.dataSource.query(
      `SELECT to_char(t.day, 'YYYY-MM-DD') AS day, t.user_id AS "userId", u.email AS "userEmail", t.model,
              t.input_tokens AS input, t.output_tokens AS output, t.cache_creation_tokens AS "cacheWrite",
              t.cache_read_tokens AS "cacheRead", t.thinking_tokens AS thinking
       FROM token_usage_daily t LEFT JOIN users u ON u.id = t.user_id
       WHERE t.organization_id = $1 AND t.day BETWEEN $2 AND $3
       ORDER BY t.day, t.model, t.user_id`,
      [organizationId, from, to],
    );
    // bigint columns arrive as strings; usage stays far below 2^53.
    return rows.map((row) => ({
      day: row.day!,
      userId: row.userId!,
      userEmail: row.userEmail,
      model: row.model!,
      input: Number(row.input),
      output: Number(row.output),
      cacheWrite: Number(row.cacheWrite),
      cacheRead: Number(row.cacheRead),
      thinking: Number(row.thinking),
    }));
  }
}

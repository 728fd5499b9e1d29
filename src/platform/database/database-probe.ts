import { Injectable } from '@nestjs/common';
import { Sql } from './sql';

/** Whether the database serves statements, for the readiness probe (`/healthz`). */
@Injectable()
export class DatabaseProbe {
  constructor(private readonly sql: Sql) {}

  /**
   * A named statement on a table, through the pool, exactly as requests run theirs, so a connection or session that
   * would fail requests fails this too. Rejects when it fails.
   */
  async check(): Promise<void> {
    await this.sql.query('health.ready', 'SELECT 1 AS ok FROM migrations LIMIT 1', []);
  }
}

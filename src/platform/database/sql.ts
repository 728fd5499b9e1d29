import { Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource, EntityManager } from 'typeorm';

/**
 * The database's clock at millisecond precision (what JSON timestamps carry), read at the statement's moment rather
 * than the transaction's start: every instance stamps and compares times by this one clock.
 */
export const DB_NOW = `date_trunc('milliseconds', clock_timestamp())`;

/** The `pg` pool under TypeORM's data source. */
export function poolOf(dataSource: DataSource): Pool {
  return (dataSource.driver as unknown as { master: Pool }).master;
}

/** Runs one SQL statement: on the pool, or inside a transaction. */
export interface SqlExecutor {
  /** `name` identifies the statement so the pool can prepare it once per connection. */
  query<T>(name: string, text: string, values: unknown[]): Promise<T[]>;
}

/**
 * The hot paths' way to the database: statements go straight to the `pg` pool under TypeORM as
 * named prepared statements, parsed and planned once per connection, without TypeORM's per-query
 * query-runner. Inside a transaction, `in(manager)` runs the same statements on its connection.
 */
@Injectable()
export class Sql implements SqlExecutor {
  private readonly pool: Pool;

  constructor(dataSource: DataSource) {
    this.pool = poolOf(dataSource);
  }

  async query<T>(name: string, text: string, values: unknown[]): Promise<T[]> {
    return (await this.pool.query({ name, text, values })).rows as T[];
  }

  in(manager: EntityManager | undefined): SqlExecutor {
    if (!manager) return this;
    return {
      query: async <T>(_name: string, text: string, values: unknown[]) => {
        const result = (await manager.query(text, values)) as T[] | [T[], number];
        // TypeORM answers UPDATE and DELETE with [rows, count].
        return (Array.isArray(result[0]) ? result[0] : result) as T[];
      },
    };
  }
}

/**
 * The values of one statement, each placed by `add` where it goes in the text: `$n` is the position it was added at,
 * so no position is matched by hand, and a fragment built elsewhere (EventLog.statementEvents) adds its own values to
 * the same statement. Built the same way every time, the text stays one prepared statement.
 */
export class Params {
  readonly values: unknown[] = [];

  /** The placeholder of `value`, cast when a type is given (`$3::uuid`). */
  add(value: unknown, cast?: string): string {
    this.values.push(value);
    return `$${this.values.length}${cast ? `::${cast}` : ''}`;
  }
}

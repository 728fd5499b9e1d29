import { Logger } from '@nestjs/common';
import { Client, PoolClient } from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { entities, migrations } from '../../schema';
import type { Metrics } from '../metrics';
import { AdvisoryLock } from './advisory-locks';
import { timedClient, watchPool } from './database-metrics';
import { EmbeddedPostgres } from './embedded-postgres';
import { poolOf } from './sql';

export interface OpenDatabase {
  dataSource: DataSource;
  engine: 'postgres' | 'pglite';
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** Apply pending migrations before returning (default true). */
  migrate?: boolean;
  /** Where the pool's use and the queries' times are counted (the server's; a CLI run has none). */
  metrics?: Metrics;
  /** Only the first this many migrations exist (a restore loads an older release's rows at their schema first). */
  migrations?: number;
}

const logger = new Logger('Database');

export interface PoolOptions {
  /** How long an idle connection is kept (0: never closed for idleness). pg's default: 10 s. */
  idleTimeoutMillis?: number;
  /** Runs on every new connection before it is handed out. */
  onConnect?: (client: PoolClient) => Promise<void>;
  /** The pool's client class (pg's own by default). */
  Client?: typeof Client;
}

export function dataSourceOptions(
  connection: { url: string } | { host: string; port: number; username: string; database: string },
  poolSize: number,
  pool: PoolOptions = {},
  migrationCount = migrations.length,
): DataSourceOptions {
  return {
    type: 'postgres',
    ...connection,
    entities,
    migrations: migrations.slice(0, migrationCount),
    migrationsTableName: 'migrations',
    synchronize: false,
    migrationsRun: false,
    // TypeORM would log failing queries with their parameters, which can hold secrets; errors are logged by the HTTP layer.
    logging: false,
    extra: { max: poolSize, connectionTimeoutMillis: 10_000, ...pool },
  };
}

/** Opens PostgreSQL (DATABASE_URL) or the embedded PGlite under DATA_DIR, and migrates it. */
export async function openDatabase(config: AppConfig, options: OpenDatabaseOptions = {}): Promise<OpenDatabase> {
  let embedded: EmbeddedPostgres | undefined;
  let connection: Parameters<typeof dataSourceOptions>[0];
  if (config.DATABASE_URL) {
    connection = { url: config.DATABASE_URL };
  } else {
    embedded = await EmbeddedPostgres.start(config.dataDir);
    connection = embedded.connectionOptions;
  }
  // PGlite is one session: one pooled connection serializes statements and transactions
  // alike, so one request's statement can never land inside another's. That connection is kept
  // however long it idles, and a new one (after an error closed the old) starts from a clean session.
  const poolSize = embedded ? 1 : config.DATABASE_POOL_SIZE;
  const PoolClientClass = listenedClient(options.metrics ? timedClient(options.metrics) : Client);
  const dataSource = new DataSource(
    embedded
      ? dataSourceOptions(
          connection,
          poolSize,
          {
            idleTimeoutMillis: config.DATABASE_IDLE_TIMEOUT_MS ?? 0,
            onConnect: resetEmbeddedSession,
            Client: PoolClientClass,
          },
          options.migrations,
        )
      : dataSourceOptions(connection, poolSize, { idleTimeoutMillis: config.DATABASE_IDLE_TIMEOUT_MS ?? 10_000, Client: PoolClientClass }, options.migrations),
  );
  try {
    await dataSource.initialize();
    if (options.metrics) watchPool(options.metrics, poolOf(dataSource), poolSize);
    if (options.migrate !== false) await migrate(dataSource, { serialize: !embedded });
  } catch (error) {
    if (dataSource.isInitialized) await dataSource.destroy();
    await embedded?.stop();
    throw error;
  }
  return {
    dataSource,
    engine: config.engine,
    async close() {
      if (dataSource.isInitialized) await dataSource.destroy();
      await embedded?.stop();
    },
  };
}

/**
 * The pool's client class, with an `error` listener of its own for the connection's whole life. `pg` emits a lost
 * connection's errors on the client (a terminated backend sends one, its closed socket another), and an event
 * emitter with no listener throws them, which ends the process: pg-pool listens only while a client is idle,
 * TypeORM only until its first error. The request that used the connection still fails (503), the pool replaces it.
 */
function listenedClient(Base: typeof Client): typeof Client {
  return class ListenedClient extends Base {
    constructor(...args: ConstructorParameters<typeof Client>) {
      super(...args);
      this.on('error', (error: Error) => logger.warn(`A database connection was lost: ${error.message}`));
    }
  };
}

/**
 * PGlite has one session, which outlives the socket connections made to it: a new connection
 * inherits the prepared statements of the closed one (the `pg` client would prepare its named
 * statements again and fail with "already exists") and possibly an open transaction. Start it
 * the way a new PostgreSQL backend starts.
 */
async function resetEmbeddedSession(client: PoolClient): Promise<void> {
  await client.query('ROLLBACK');
  await client.query('DISCARD ALL');
}

/** Refuses a database with migrations this release does not have (a downgrade), before any of ours run. */
async function refuseNewerSchema(dataSource: DataSource): Promise<void> {
  const runner = dataSource.createQueryRunner();
  try {
    const [{ present }] = (await runner.query(`SELECT to_regclass('migrations') IS NOT NULL AS present`)) as Array<{ present: boolean }>;
    if (!present) return;
    const known = new Set(dataSource.migrations.map((migration) => migration.name));
    const unknown = ((await runner.query('SELECT name FROM migrations ORDER BY id')) as Array<{ name: string }>)
      .map((row) => row.name)
      .filter((name) => !known.has(name));
    if (unknown.length > 0) throw new SchemaTooNewError(unknown);
  } finally {
    await runner.release();
  }
}

/**
 * Runs pending migrations. On a PostgreSQL server several instances may start together, so they
 * take turns under an advisory lock; PGlite's lock file already guarantees a single process.
 */
export async function migrate(dataSource: DataSource, { serialize }: { serialize: boolean }): Promise<void> {
  if (!serialize) {
    await runMigrations(dataSource);
    return;
  }
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [AdvisoryLock.Migrations]);
    await runMigrations(dataSource);
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [AdvisoryLock.Migrations]).catch(() => undefined);
    await runner.release();
  }
}

/** The database was migrated by a newer release: this one would not know its schema, and must not write to it. */
export class SchemaTooNewError extends Error {
  constructor(readonly unknown: string[]) {
    super(
      `The database was migrated by a newer release of Agent Platform (migration ${unknown.join(', ')}, unknown to this one). ` +
        'Nothing was changed: start that release (or a newer one), or restore a backup made by this one into a new database.',
    );
  }
}

async function runMigrations(dataSource: DataSource): Promise<void> {
  await refuseNewerSchema(dataSource);
  const applied = await dataSource.runMigrations({ transaction: 'each' });
  if (applied.length > 0) logger.log(`Applied migrations: ${applied.map((m) => m.name).join(', ')}`);
}

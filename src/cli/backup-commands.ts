import { INestApplicationContext } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { DataSource } from 'typeorm';
import { AppConfig, loadConfig } from '../config/app-config';
import { openDatabase } from '../platform/database/open-database';
import { countTables, inspectSnapshot, loadSnapshot, SnapshotError, writeSnapshot } from '../platform/database/snapshot';
import { KEY_FILE as SECRETS_KEY_FILE, SecretBox } from '../platform/secrets/secret-box';
import { migrations } from '../schema';

/** What a backup needs kept beside it: the secrets key its encrypted values were made with. */
function needs(secretKeyIds: string[], config: AppConfig): string {
  if (secretKeyIds.length === 0) return 'nothing: it holds no encrypted values.';
  const where = config.SECRETS_KEY ? 'SECRETS_KEY' : `${join(config.dataDir, SECRETS_KEY_FILE)} (or its contents as SECRETS_KEY)`;
  return `the secrets key ${secretKeyIds.join(', ')} (${where}): without it, custom models' API keys cannot be read. Keep it apart from the backup.`;
}

/**
 * `backup <file>`: the database's snapshot, while the server runs (on the embedded database the server writes it; on
 * PostgreSQL the CLI reads a REPEATABLE READ snapshot beside the running servers). `file` is absolute by then (main.ts).
 */
export async function backup(app: INestApplicationContext, args: string[]): Promise<unknown> {
  const [file] = args;
  if (!file || args.length !== 1 || !isAbsolute(file)) throw new SnapshotError('Usage: backup <file>');
  const config = app.get(AppConfig);
  const snapshot = await writeSnapshot(app.get(DataSource), file, config.engine);
  return {
    file,
    engine: snapshot.engine,
    schema: snapshot.migrations[snapshot.migrations.length - 1],
    rows: snapshot.rows,
    tables: snapshot.tables,
    needs: needs(snapshot.secretKeyIds, config),
  };
}

/**
 * `restore <file>`: the snapshot into the configured database, which must be empty (a new DATA_DIR, or a PostgreSQL
 * database without tables). Refused, before anything is written, when the file is cut short, was made by a newer
 * release, or needs a secrets key the configuration lacks. The schema is migrated to the snapshot's level, the rows
 * loaded in one transaction, then the migrations since run.
 */
export async function restore(config: AppConfig, file: string, keys: { ids: string[]; source: string } = keysOf(config)): Promise<unknown> {
  const snapshot = await inspectSnapshot(file);
  const known = migrations.map((migration) => migration.name);
  const unknown = snapshot.migrations.filter((name, i) => known[i] !== name);
  if (unknown.length > 0) {
    throw new SnapshotError(
      `${file} was made by a release whose schema this one does not know (${unknown[0]}): restore it with that release or a newer one. Nothing was changed.`,
    );
  }
  const missing = snapshot.secretKeyIds.filter((id) => !keys.ids.includes(id));
  if (missing.length > 0) {
    throw new SnapshotError(
      `${file} holds values encrypted with the secrets key ${missing.join(', ')}, which ${keys.source}. ` +
        'Set SECRETS_KEY to that key (or copy secrets.key into the new DATA_DIR) and run restore again. Nothing was changed.',
    );
  }
  if (config.engine === 'pglite' && existsSync(join(config.dataDir, 'pgdata'))) {
    throw new SnapshotError(`${config.dataDir} already holds a database: restore into a new DATA_DIR. Nothing was changed.`);
  }
  await refuseNonEmptyPostgres(config);

  const atSnapshot = await openDatabase(config, { migrate: true, migrations: snapshot.migrations.length });
  let counts: Record<string, number>;
  try {
    counts = await loadSnapshot(atSnapshot.dataSource, file, snapshot);
  } finally {
    await atSnapshot.close();
  }
  // Then forward to this release's schema, as a start would.
  const current = await openDatabase(config);
  await current.close();
  return {
    restored: file,
    into: config.dataLocation,
    takenAt: snapshot.createdAt,
    from: snapshot.engine,
    schema: known[known.length - 1],
    rows: snapshot.rows,
    tables: counts,
  };
}

/** `move-to-postgres <url>`: the embedded database's snapshot (taken by `takeBackup`) restored into an empty PostgreSQL database. */
export async function moveToPostgres(config: AppConfig, url: string, takeBackup: (file: string) => Promise<void>): Promise<unknown> {
  if (config.engine !== 'pglite')
    throw new SnapshotError('move-to-postgres copies the embedded database: unset DATABASE_URL and give the target as its argument.');
  // The servers on PostgreSQL will need SECRETS_KEY; until it is set, the embedded database's own key is the one to check.
  const keys = keysOf(config);
  const secretsKey = config.SECRETS_KEY ?? readKeyFile(config);
  const target = loadConfig({ ...process.env, DATABASE_URL: url, ...(secretsKey ? { SECRETS_KEY: secretsKey } : {}) });
  const folder = await mkdtemp(join(tmpdir(), 'agent-platform-move-'));
  try {
    const file = join(folder, 'snapshot.jsonl.gz');
    await takeBackup(file);
    const result = (await restore(target, file, keys)) as Record<string, unknown>;
    const next = config.SECRETS_KEY
      ? 'Start the servers with DATABASE_URL set to it and the same SECRETS_KEY.'
      : `Start the servers with DATABASE_URL set to it and SECRETS_KEY set to the contents of ${join(config.dataDir, SECRETS_KEY_FILE)}.`;
    return { ...result, next };
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** The ids of the keys the configuration decrypts with, without making a key file where there is none. */
function keysOf(config: AppConfig): { ids: string[]; source: string } {
  if (config.SECRETS_KEY) return { ids: SecretBox.loadKeys(config).map((key) => key.id), source: 'SECRETS_KEY does not hold' };
  if (config.engine === 'pglite' && existsSync(join(config.dataDir, SECRETS_KEY_FILE))) {
    return { ids: SecretBox.loadKeys(config).map((key) => key.id), source: `${join(config.dataDir, SECRETS_KEY_FILE)} is not` };
  }
  return { ids: [], source: 'is not configured (no SECRETS_KEY, no secrets.key in DATA_DIR)' };
}

function readKeyFile(config: AppConfig): string | undefined {
  const path = join(config.dataDir, SECRETS_KEY_FILE);
  return existsSync(path) ? SecretBox.keyFileText(path) : undefined;
}

async function refuseNonEmptyPostgres(config: AppConfig): Promise<void> {
  if (config.engine !== 'postgres') return;
  const probe = await openDatabase(config, { migrate: false });
  try {
    const tables = await countTables(probe.dataSource);
    if (tables > 0) throw new SnapshotError(`The PostgreSQL database already has ${tables} tables: restore into an empty database. Nothing was changed.`);
  } finally {
    await probe.close();
  }
}

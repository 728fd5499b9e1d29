import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { PassThrough } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import { DataSource, QueryRunner } from 'typeorm';
import { DomainError, ErrorKind } from '../http/domain-error';

/**
 * A consistent logical copy of the whole database, the same on both engines, so a backup of the embedded database
 * can be restored into PostgreSQL (and back). One gzip file of JSON lines:
 * - a header: the format, the migrations the schema was at, each table's row count and each sequence's value;
 * - each table: a line naming it (`["table", name]`), then one line per row, the row as PostgreSQL prints it as JSON
 *   (`row_to_json`, an object), never parsed here, so numbers, times and bytes keep every digit;
 * - a trailer (`["end", {...}]`): the ids of the secrets keys the rows' encrypted values need, and the row total. A file without it was
 *   cut short and is refused.
 * All of it is read in one REPEATABLE READ transaction: what one moment held.
 */
export const SNAPSHOT_FORMAT = 'agent-platform-snapshot';
const SNAPSHOT_VERSION = 1;
/** Rows read per round trip, and written per statement. */
const BATCH_ROWS = 500;
const ENCRYPTED_VALUE = /enc:v1:([0-9a-f]{16}):/g;

export interface SnapshotHeader {
  format: typeof SNAPSHOT_FORMAT;
  version: number;
  createdAt: string;
  engine: 'postgres' | 'pglite';
  /** The migrations applied when it was taken, in order: the schema its rows fit. */
  migrations: string[];
  /** Rows of each table, in the order their rows follow. */
  tables: Record<string, number>;
  sequences: Record<string, { lastValue: string; isCalled: boolean }>;
}

export interface SnapshotTrailer {
  end: true;
  rows: number;
  /** The secrets keys (their ids, as SECRETS_KEY's keys are named) that the encrypted values in it were made with. */
  secretKeyIds: string[];
}

/** A snapshot that cannot be taken or loaded as asked, said in the operator's terms. */
export class SnapshotError extends DomainError<'snapshot_refused'> {
  readonly kind = ErrorKind.InvalidRequest;

  constructor(message: string) {
    super('snapshot_refused', message);
  }
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Writes the database's snapshot to `path` (made whole under another name, then renamed: never half a file). */
export async function writeSnapshot(dataSource: DataSource, path: string, engine: SnapshotHeader['engine']): Promise<SnapshotHeader & SnapshotTrailer> {
  const partial = `${path}.partial`;
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  const lines = new PassThrough();
  const written = pipeline(lines, createGzip(), createWriteStream(partial, { mode: 0o600 }));
  try {
    await runner.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const header = await readHeader(runner, engine);
    await put(lines, JSON.stringify(header));
    const keyIds = new Set<string>();
    let rows = 0;
    for (const table of Object.keys(header.tables)) {
      await put(lines, JSON.stringify(['table', table]));
      await runner.query(`DECLARE snapshot_rows NO SCROLL CURSOR FOR SELECT row_to_json(t)::text AS r FROM ${quote(table)} t`);
      for (;;) {
        const batch = (await runner.query(`FETCH ${BATCH_ROWS} FROM snapshot_rows`)) as Array<{ r: string }>;
        for (const { r } of batch) {
          for (const match of r.matchAll(ENCRYPTED_VALUE)) keyIds.add(match[1]);
          await put(lines, r);
        }
        rows += batch.length;
        if (batch.length < BATCH_ROWS) break;
      }
      await runner.query('CLOSE snapshot_rows');
    }
    const trailer: SnapshotTrailer = { end: true, rows, secretKeyIds: [...keyIds].sort() };
    await put(lines, JSON.stringify(['end', trailer]));
    lines.end();
    await written;
    await rename(partial, path);
    return { ...header, ...trailer };
  } catch (error) {
    lines.destroy();
    await written.catch(() => undefined);
    await rm(partial, { force: true });
    throw error;
  } finally {
    await runner.query('ROLLBACK').catch(() => undefined);
    await runner.release();
  }
}

async function readHeader(runner: QueryRunner, engine: SnapshotHeader['engine']): Promise<SnapshotHeader> {
  const migrations = ((await runner.query('SELECT name FROM migrations ORDER BY id')) as Array<{ name: string }>).map((row) => row.name);
  const tables: Record<string, number> = {};
  for (const table of await userTables(runner)) {
    const [{ n }] = (await runner.query(`SELECT count(*)::text AS n FROM ${quote(table)}`)) as Array<{ n: string }>;
    tables[table] = Number(n);
  }
  const sequences: SnapshotHeader['sequences'] = {};
  for (const { name } of (await runner.query(`SELECT sequencename AS name FROM pg_sequences WHERE schemaname = 'public' ORDER BY 1`)) as Array<{
    name: string;
  }>) {
    const [state] = (await runner.query(`SELECT last_value::text AS "lastValue", is_called AS "isCalled" FROM ${quote(name)}`)) as Array<{
      lastValue: string;
      isCalled: boolean;
    }>;
    sequences[name] = state;
  }
  return { format: SNAPSHOT_FORMAT, version: SNAPSHOT_VERSION, createdAt: new Date().toISOString(), engine, migrations, tables, sequences };
}

/** The application's tables (not the migrations' own record, which the restore's migrations write). */
async function userTables(runner: QueryRunner): Promise<string[]> {
  const rows = (await runner.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'migrations' ORDER BY tablename`)) as Array<{
    tablename: string;
  }>;
  return rows.map((row) => row.tablename);
}

/** Writes a line, waiting when the file is slower than the database. */
async function put(out: PassThrough, line: string): Promise<void> {
  if (!out.write(`${line}\n`)) await new Promise((resolve) => out.once('drain', resolve));
}

async function* linesOf(path: string): AsyncGenerator<string> {
  const input = createReadStream(path).pipe(createGunzip());
  try {
    yield* createInterface({ input, crlfDelay: Infinity });
  } catch (error) {
    throw new SnapshotError(`${path} is not a readable snapshot: ${(error as Error).message}`);
  }
}

/** Reads the header and the trailer, checking that the file is whole (every table's rows, then the trailer). */
export async function inspectSnapshot(path: string): Promise<SnapshotHeader & SnapshotTrailer> {
  let header: SnapshotHeader | undefined;
  let trailer: SnapshotTrailer | undefined;
  const counted: Record<string, number> = {};
  let table: string | undefined;
  for await (const line of linesOf(path)) {
    if (!header) {
      header = parseHeader(line, path);
      continue;
    }
    if (trailer) throw new SnapshotError(`${path} goes on after its end: it is not one snapshot.`);
    const marker = markerOf(line);
    if (marker?.[0] === 'table') {
      table = marker[1];
      counted[table] = 0;
    } else if (marker?.[0] === 'end') {
      trailer = marker[1];
    } else if (table !== undefined) {
      counted[table]++;
    } else {
      throw new SnapshotError(`${path}: a row before any table.`);
    }
  }
  if (!header) throw new SnapshotError(`${path} is empty.`);
  if (!trailer) throw new SnapshotError(`${path} was cut short (no end): take the backup again.`);
  for (const [name, rows] of Object.entries(header.tables)) {
    if (counted[name] !== rows) throw new SnapshotError(`${path}: table ${name} has ${counted[name] ?? 0} rows, its header says ${rows}.`);
  }
  return { ...header, ...trailer };
}

/** A table's or the end's line (rows are objects, these arrays). */
function markerOf(line: string): ['table', string] | ['end', SnapshotTrailer] | undefined {
  return line.startsWith('[') ? (JSON.parse(line) as ['table', string] | ['end', SnapshotTrailer]) : undefined;
}

function parseHeader(line: string, path: string): SnapshotHeader {
  let header: SnapshotHeader;
  try {
    header = JSON.parse(line) as SnapshotHeader;
  } catch {
    throw new SnapshotError(`${path} is not a snapshot of this server (its first line is not its header).`);
  }
  if (header.format !== SNAPSHOT_FORMAT) throw new SnapshotError(`${path} is not a snapshot of this server.`);
  if (header.version !== SNAPSHOT_VERSION)
    throw new SnapshotError(`${path} is a snapshot of format version ${header.version}; this release reads ${SNAPSHOT_VERSION}.`);
  return header;
}

/**
 * Loads a snapshot into a database just migrated to the snapshot's migrations (empty before), in one transaction:
 * foreign keys are dropped, every row inserted, the keys added back (checking every row against them) and the
 * sequences set; each table's count is checked against the header before the commit. Returns the counts.
 */
export async function loadSnapshot(dataSource: DataSource, path: string, header: SnapshotHeader): Promise<Record<string, number>> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.startTransaction();
    const foreignKeys = (await runner.query(
      `SELECT conrelid::regclass::text AS "table", conname AS name, pg_get_constraintdef(oid) AS definition
         FROM pg_constraint WHERE contype = 'f' AND connamespace = 'public'::regnamespace`,
    )) as Array<{ table: string; name: string; definition: string }>;
    for (const key of foreignKeys) await runner.query(`ALTER TABLE ${key.table} DROP CONSTRAINT ${quote(key.name)}`);
    // The database was empty before its migrations ran: rows found now are the ones they seed, which the snapshot holds too.
    const tables = Object.keys(header.tables).map(quote);
    if (tables.length > 0) await runner.query(`TRUNCATE ${tables.join(', ')}`);

    let table: string | undefined;
    let columns = '';
    let batch: string[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      await runner.query(
        `INSERT INTO ${quote(table!)} (${columns}) OVERRIDING SYSTEM VALUE SELECT ${columns} FROM jsonb_populate_recordset(NULL::${quote(table!)}, $1::jsonb)`,
        [`[${batch.join(',')}]`],
      );
      batch = [];
    };
    let first = true;
    for await (const line of linesOf(path)) {
      if (first) {
        first = false;
        continue;
      }
      const marker = markerOf(line);
      if (marker) {
        await flush();
        if (marker[0] === 'end') break;
        table = marker[1];
        if (!(table in header.tables)) throw new SnapshotError(`${path}: table ${table} is not in its header.`);
        columns = (await writableColumns(runner, table)).map(quote).join(', ');
        continue;
      }
      batch.push(line);
      if (batch.length >= BATCH_ROWS) await flush();
    }
    for (const key of foreignKeys) await runner.query(`ALTER TABLE ${key.table} ADD CONSTRAINT ${quote(key.name)} ${key.definition}`);
    for (const [name, { lastValue, isCalled }] of Object.entries(header.sequences)) {
      await runner.query('SELECT setval($1::regclass, $2::bigint, $3)', [quote(name), lastValue, isCalled]);
    }
    const counts: Record<string, number> = {};
    for (const [name, rows] of Object.entries(header.tables)) {
      const [{ n }] = (await runner.query(`SELECT count(*)::int AS n FROM ${quote(name)}`)) as Array<{ n: number }>;
      if (n !== rows) throw new SnapshotError(`Table ${name}: ${n} rows restored, the snapshot holds ${rows}. Nothing was kept.`);
      counts[name] = n;
    }
    await runner.commitTransaction();
    return counts;
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw error;
  } finally {
    await runner.release();
  }
}

/** How many tables the database has (0: nothing to overwrite). */
export async function countTables(dataSource: DataSource): Promise<number> {
  const runner = dataSource.createQueryRunner();
  try {
    const [{ n }] = (await runner.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`)) as Array<{ n: number }>;
    return n;
  } finally {
    await runner.release();
  }
}

/** The columns a row can be written to (not the ones PostgreSQL computes). */
async function writableColumns(runner: QueryRunner, table: string): Promise<string[]> {
  const rows = (await runner.query(
    `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`,
    [quote(table)],
  )) as Array<{ attname: string }>;
  if (rows.length === 0) throw new SnapshotError(`Table ${table} of the snapshot does not exist here.`);
  return rows.map((row) => row.attname);
}

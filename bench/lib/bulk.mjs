// Helpers for loaders: fast set-based loading that ends with exactly the schema the migrations made.

/**
 * SQL for a UUIDv7 whose time part is `ms` (an SQL bigint of epoch milliseconds), time-ordered like the app's ids,
 * so bulk rows sit in primary-key indexes as live ones do. PostgreSQL 15 has no uuidv7().
 */
export function uuidv7(ms) {
  return `encode(set_bit(set_bit(substring(int8send(${ms}) from 3) || substring(uuid_send(gen_random_uuid()) from 7), 52, 1), 53, 1), 'hex')::uuid`;
}

/**
 * Runs `fill` in one transaction with the tables' indexes and keys dropped, then rebuilds them as they were:
 * one sorted build per index is far faster than maintaining them row by row, and foreign keys are then checked
 * in one join instead of a lookup per row. Empty tables are truncated first: on a wal_level=minimal server
 * (the bench's own cluster while loading) rows written to a table truncated in the same transaction skip the WAL.
 */
export async function bulkLoad(db, tables, fill, log) {
  await db.query('BEGIN');
  try {
    await db.query(`SET LOCAL synchronous_commit = off`);
    await db.query(`SET LOCAL work_mem = '256MB'`);
    await db.query(`SET LOCAL maintenance_work_mem = '1GB'`);
    const { rows: constraints } = await db.query(
      `SELECT contype,
              format('ALTER TABLE %s DROP CONSTRAINT %I', conrelid::regclass, conname) AS drop,
              format('ALTER TABLE %s ADD CONSTRAINT %I %s', conrelid::regclass, conname, pg_get_constraintdef(oid)) AS create
       FROM pg_constraint
       WHERE contype IN ('p', 'u', 'f') AND (conrelid = ANY($1::regclass[]) OR confrelid = ANY($1::regclass[]))
       ORDER BY contype = 'f' DESC`,
      [tables],
    );
    const { rows: indexes } = await db.query(
      `SELECT format('DROP INDEX %s', i.indexrelid::regclass) AS drop, pg_get_indexdef(i.indexrelid) AS create
       FROM pg_index i
       WHERE i.indrelid = ANY($1::regclass[])
         AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid)`,
      [tables],
    );
    // Foreign keys first, since they depend on the primary keys they reference.
    for (const c of constraints) await db.query(c.drop);
    for (const i of indexes) await db.query(i.drop);

    const empty = await Promise.all(tables.map(async (t) => (await db.query(`SELECT 1 FROM ${t} LIMIT 1`)).rowCount === 0));
    if (empty.every(Boolean)) await db.query(`TRUNCATE ${tables.join(', ')}`);

    await fill();

    const started = Date.now();
    const keys = constraints.filter((c) => c.contype !== 'f');
    const foreign = constraints.filter((c) => c.contype === 'f');
    for (const statement of [...keys.map((c) => c.create), ...indexes.map((i) => i.create), ...foreign.map((c) => c.create)]) {
      await db.query(statement);
    }
    log?.(`rebuilt ${keys.length + indexes.length} indexes and ${foreign.length} foreign keys of ${tables.join(', ')} in ${seconds(started)} s`);
    await db.query('COMMIT');
  } catch (error) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

export function seconds(since) {
  return ((Date.now() - since) / 1000).toFixed(1);
}

// WAL written while a write scenario is measured: pg_stat_wal (PostgreSQL 14+), cross-checked with the WAL position.
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A backend adds its WAL to pg_stat_wal at most once a second while busy, and once idle only 10 s later (PostgreSQL
 * 15's PGSTAT_IDLE_INTERVAL). Read right after the warm-up and right after the measured seconds, with the servers'
 * connections busy all along, each end misses under a second of each connection's WAL: the window is shifted, not
 * shortened. But a run's last second would reach pg_stat_wal during the next run: after a write run, the bench waits
 * SETTLE_MS before going on. The WAL position (pg_current_wal_insert_lsn) is exact and immediate, but also counts
 * page headers and record alignment: beside pg_stat_wal, a check.
 */
export const SETTLE_MS = 11_000;

/** Null where there is no pg_stat_wal (PostgreSQL before 14). */
export async function walNow(db) {
  try {
    const { rows } = await db.query(
      `SELECT wal_bytes::float8 AS bytes, wal_records::float8 AS records, wal_fpi::float8 AS fpi, pg_current_wal_insert_lsn()::text AS lsn FROM pg_stat_wal`,
    );
    return rows[0];
  } catch {
    return null;
  }
}

/** The WAL since `before` (from walNow); then waits SETTLE_MS for the connections' last WAL to reach pg_stat_wal. */
export async function walSince(db, before) {
  if (!before) return null;
  const after = await walNow(db);
  const { rows } = await db.query(`SELECT pg_wal_lsn_diff($1, $2)::float8 AS bytes`, [after.lsn, before.lsn]);
  await sleep(SETTLE_MS);
  return { bytes: after.bytes - before.bytes, records: after.records - before.records, fullPageImages: after.fpi - before.fpi, lsnBytes: rows[0].bytes };
}

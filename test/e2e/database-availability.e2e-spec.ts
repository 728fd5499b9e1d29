import { chmod, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import { poolOf as poolOfDataSource } from '../../src/platform/database/sql';
import { createTestDatabase, serverUrl, withAdmin } from '../utils/test-database';
import { startTestApp, TestApp } from '../utils/test-app';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { LONG_WAIT_MS, until } from '../utils/polling';

const onPglite = !serverUrl();

/** Every background job off or out of the way: nothing but the test's requests touches the pool. */
const QUIET = {
  PROVISIONING_CONCURRENCY: '0',
  LOCAL_AGENTS: 'off',
  RETENTION_SWEEP_MS: '3600000',
  ANALYTICS_ROLLUP_MS: '3600000',
  AUTH_CACHE_MS: '0',
  CONTROLS_CACHE_MS: '0',
  EVENT_LISTENER_SWEEP_MS: '3600000',
  WEBHOOK_POLL_MS: '3600000',
  TURN_SWEEP_MS: '3600000',
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);

/** One authenticated read of every module. */
function everyModule(): string[] {
  return [
    '/settings/api-keys',
    '/api/v0/sessions',
    '/api/v0/computers',
    '/api/v0/organization/enterprise-controls',
    '/api/organization/readiness-repositories',
    `/api/v1/analytics/tokens?startDate=${day(7)}&endDate=${day(1)}`,
  ];
}

async function expectServing(t: TestApp, owner: TestUser): Promise<void> {
  const statuses: Record<string, number> = {};
  for (const path of everyModule()) statuses[path] = (await t.http().get(path).set(owner.auth)).status;
  statuses['/healthz'] = (await t.http().get('/healthz')).status;
  expect(statuses).toEqual(Object.fromEntries(Object.keys(statuses).map((path) => [path, 200])));
}

const poolOf = (t: TestApp): Pool => poolOfDataSource(t.app.get(DataSource));

describe('The database connection survives idleness, errors and lost connections', () => {
  let t: TestApp;
  let owner: TestUser;

  afterEach(() => t?.close());

  it('idle past the pool timeout with every job off, then every module answers 200 (named statements are prepared again)', async () => {
    t = await startTestApp({ ...QUIET, DATABASE_IDLE_TIMEOUT_MS: '100' });
    owner = await createUser(t, Role.Owner);
    await expectServing(t, owner);
    for (let round = 0; round < 2; round++) {
      // The pool really lets its connections go (100 ms idle): what follows runs on new ones.
      await until(
        () => poolOf(t).totalCount,
        (open) => open === 0,
        'the pool to close its idle connections',
        LONG_WAIT_MS,
      );
      await expectServing(t, owner);
    }
  });

  (onPglite ? it : it.skip)('on PGlite the one connection is never closed for idleness by default', async () => {
    t = await startTestApp(QUIET);
    owner = await createUser(t, Role.Owner);
    await expectServing(t, owner);
    expect((poolOf(t) as unknown as { options: { idleTimeoutMillis: number } }).options.idleTimeoutMillis).toBe(0);
    await sleep(300);
    expect(poolOf(t).totalCount).toBe(1);
    await expectServing(t, owner);
  });

  it('a failed statement, a query given up by its caller, and a connection torn down leave requests working', async () => {
    t = await startTestApp(QUIET);
    owner = await createUser(t, Role.Owner);
    await expectServing(t, owner);
    const pool = poolOf(t);

    await expect(pool.query({ name: 'test.fails', text: 'SELECT 1 / $1::int', values: [0] })).rejects.toThrow(/division by zero/);
    await expectServing(t, owner);

    // A caller that stops waiting (pg's query_timeout): the statement still finishes on its connection.
    await expect(pool.query({ text: 'SELECT pg_sleep(0.3)', query_timeout: 20 } as never)).rejects.toThrow(/timeout/i);
    await expectServing(t, owner);

    // The socket under the pooled connection dies mid-transaction.
    const client = await pool.connect();
    client.on('error', () => undefined);
    await client.query('BEGIN');
    await client.query('SELECT 1');
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    await sleep(50);
    client.release(true);
    await expectServing(t, owner);
  });

  (onPglite ? it.skip : it)('on PostgreSQL, cancelled queries and terminated backends leave requests working', async () => {
    t = await startTestApp(QUIET);
    owner = await createUser(t, Role.Owner);
    await expectServing(t, owner);
    const database = new URL(t.config.DATABASE_URL!).pathname.slice(1);
    const admin = serverUrl()!;
    const sleeping = poolOf(t).query('SELECT pg_sleep(5)');
    // Cancelled once it runs (a cancel before would find nothing, and it would simply end after 5 s).
    await until(
      () =>
        withAdmin(admin, async (c) => {
          const { rows } = await c.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND state = 'active' AND query = 'SELECT pg_sleep(5)'`,
            [database],
          );
          return rows[0].n;
        }),
      (n) => n === 1,
      'the statement to run',
      LONG_WAIT_MS,
    );
    await withAdmin(admin, (c) =>
      c.query(`SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND query = 'SELECT pg_sleep(5)'`, [database]),
    );
    await expect(sleeping).rejects.toThrow(/cancel/);
    await expectServing(t, owner);

    await withAdmin(admin, (c) => c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]));
    await sleep(100);
    await expectServing(t, owner);
  });
});

describe('GET /healthz tells whether requests can be served; GET /livez whether the process runs', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startTestApp(QUIET);
    owner = await createUser(t, Role.Owner);
  });

  afterAll(() => t.close());

  it('answers 200 with the engine, and /livez 200, both without credentials', async () => {
    const health = await t.http().get('/healthz');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok', database: onPglite ? 'pglite' : 'postgres' });
    const live = await t.http().get('/livez');
    expect(live.status).toBe(200);
    expect(live.body).toEqual({ status: 'ok' });
  });

  it('answers 503 while the connections would fail requests’ prepared statements (where SELECT 1 passes), and 200 once the pool has replaced them', async () => {
    const pool = poolOf(t);
    const max = (pool as unknown as { options: { max: number } }).options.max;
    await t.http().get('/healthz');
    // The state the embedded engine used to reach after a reconnection: the session holds statements
    // under the names the driver is about to prepare, so every named statement fails and unnamed ones pass.
    const clients: PoolClient[] = [];
    for (let i = 0; i < max; i++) clients.push(await pool.connect());
    for (const client of clients) {
      await client.query('DEALLOCATE ALL');
      (client as unknown as { connection: { parsedStatements: object } }).connection.parsedStatements = {};
      await client.query(`PREPARE "health.ready" AS SELECT 1`);
      await client.query(`PREPARE "auth.apiKeyByHash" AS SELECT 1`);
    }
    for (const client of clients) client.release();

    expect((await pool.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    const health = await t.http().get('/healthz');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 503, title: expect.any(String), detail: expect.stringMatching(/database/i) });
    expect((await t.http().get('/livez')).status).toBe(200);

    // A statement that fails through the pool costs its connection; the next one starts clean (on
    // PGlite too: the new connection resets the session). Each failed request replaces one of the `max`
    // poisoned connections, so at most `max` requests fail. Rounds of `max` concurrent requests reach the
    // idle connections too (one request at a time would keep reusing the freshest connection).
    // Until then, a request on a poisoned connection is a 500 the document does not list (a database failure is not yet a 503).
    const poisoned = t.http().unchecked('requests on connections the test poisoned fail with 500 until the pool replaces them');
    const request = (i: number) => (i % 2 ? poisoned.get('/api/v0/sessions').set(owner.auth) : poisoned.get('/healthz'));
    const statuses: number[] = [];
    const settled = () => statuses.length >= max && statuses.slice(-max).every((status) => status === 200);
    for (let round = 0; round <= max + 1 && !settled(); round++) {
      statuses.push(...(await Promise.all(Array.from({ length: max }, (_, i) => request(i)))).map((response) => response.status));
    }
    expect(statuses.filter((status) => status !== 200).length).toBeLessThanOrEqual(max);
    expect(settled()).toBe(true);
  });
});

(onPglite ? describe : describe.skip)('DATA_DIR is readable by the server’s user alone', () => {
  let t: TestApp | undefined;
  let umask: number;

  beforeEach(() => {
    umask = process.umask(0o022);
  });

  afterEach(async () => {
    await t?.close();
    process.umask(umask);
  });

  it('folders are 0700 and files 0600, secrets.key and the database’s included, whatever the umask and the modes left before', async () => {
    const database = await createTestDatabase();
    // What an older version, or a copy made carelessly, left behind: open modes everywhere.
    await writeFile(join(database.dataDir, 'secrets.key'), `${Buffer.alloc(32, 7).toString('base64')}\n`, { mode: 0o644 });
    for (const entry of await readdir(database.dataDir, { recursive: true, withFileTypes: true })) {
      await chmod(join(entry.parentPath, entry.name), entry.isDirectory() ? 0o755 : 0o666);
    }
    t = await startTestApp(QUIET, database);
    const owner = await createUser(t, Role.Owner);
    // Work that writes to the database's files after start.
    for (let i = 0; i < 20; i++)
      await t
        .http()
        .post('/api/v0/sessions')
        .set(owner.auth)
        .send({ title: `session ${i}` });
    await t.app.get(DataSource).query('CHECKPOINT');

    const open: string[] = [];
    const entries = await readdir(database.dataDir, { recursive: true, withFileTypes: true });
    for (const entry of [{ parentPath: database.dataDir, name: '', isDirectory: () => true, isSymbolicLink: () => false }, ...entries]) {
      if (entry.isSymbolicLink()) continue;
      const path = join(entry.parentPath, entry.name);
      const mode = (await stat(path).catch(() => null))?.mode;
      if (mode === undefined) continue;
      if ((mode & 0o777) !== (entry.isDirectory() ? 0o700 : 0o600)) open.push(`${(mode & 0o777).toString(8)} ${path}`);
    }
    expect(open).toEqual([]);
    expect(entries.length).toBeGreaterThan(100);
    expect(((await stat(join(database.dataDir, 'secrets.key'))).mode & 0o777).toString(8)).toBe('600');
    await t.close();
    t = undefined;
    await database.drop();
  });
});

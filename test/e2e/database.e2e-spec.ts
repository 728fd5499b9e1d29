import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/app-config';
import { bigintToNumber } from '../../src/platform/database/column-transformers';
import { DataDirectoryBusyError } from '../../src/platform/database/embedded-postgres';
import { openDatabase } from '../../src/platform/database/open-database';
import { serverUrl } from '../utils/test-database';
import { startTestApp, TestApp } from '../utils/test-app';

describe('Storage', () => {
  let t: TestApp;
  let db: DataSource;

  beforeAll(async () => {
    t = await startTestApp();
    db = t.app.get(DataSource);
  });

  afterAll(() => t.close());

  it('the entities and the migrations describe the same schema', async () => {
    const pending = await db.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((q) => q.query)).toEqual([]);
  });

  it("a message into a session changes none of its indexed columns, so the session's update can stay on its page (HOT)", async () => {
    // The columns every message sets (updated_at, the counters); status and pending_since change only on a transition.
    const everyMessage = ['updated_at', 'message_count', 'last_message_id', 'last_user_seq'];
    const indexes = (await db.query(
      `SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS def FROM pg_index WHERE indrelid = 'sessions'::regclass`,
    )) as Array<{
      name: string;
      def: string;
    }>;
    expect(indexes.length).toBeGreaterThan(3);
    const covering = indexes.filter(({ def }) => everyMessage.some((column) => new RegExp(`\\b${column}\\b`).test(def))).map(({ name }) => name);
    expect(covering).toEqual([]);
    const [{ options }] = (await db.query(`SELECT reloptions AS options FROM pg_class WHERE oid = 'sessions'::regclass`)) as Array<{ options: string[] }>;
    expect(options).toContain('fillfactor=80');
  });

  it('100 concurrent increments under FOR UPDATE all land', async () => {
    await db.query('CREATE TABLE counter_test (id int PRIMARY KEY, n bigint NOT NULL)');
    await db.query('INSERT INTO counter_test VALUES (1, 0)');
    await Promise.all(
      Array.from({ length: 100 }, () =>
        db.transaction(async (manager) => {
          const [row] = await manager.query('SELECT n FROM counter_test WHERE id = 1 FOR UPDATE');
          await new Promise((resolve) => setImmediate(resolve));
          await manager.query('UPDATE counter_test SET n = $1 WHERE id = 1', [Number(row.n) + 1]);
        }),
      ),
    );
    const [{ n }] = await db.query('SELECT n FROM counter_test WHERE id = 1');
    expect(Number(n)).toBe(100);
  });

  it('concurrent statements never see each other’s parameters', async () => {
    // Different statements with different parameters, all at once, outside transactions.
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        i % 2 === 0
          ? db.query('SELECT $1::int * 2 AS v', [i]).then(([row]) => [i, row.v])
          : db.query("SELECT $1::text || '-' || $2::text AS v", [`a${i}`, `b${i}`]).then(([row]) => [i, row.v]),
      ),
    );
    for (const [i, v] of results) expect(v).toEqual(i % 2 === 0 ? i * 2 : `a${i}-b${i}`);
  });

  it('a failed transaction rolls back and leaves the connection usable', async () => {
    await db.query('CREATE TABLE rollback_test (id int PRIMARY KEY)');
    await expect(
      db.transaction(async (manager) => {
        await manager.query('INSERT INTO rollback_test VALUES (1)');
        await manager.query('INSERT INTO rollback_test VALUES (1)');
      }),
    ).rejects.toThrow(/duplicate key/);
    expect(await db.query('SELECT count(*)::int AS c FROM rollback_test')).toEqual([{ c: 0 }]);
  });

  it('bigint columns come back as JSON numbers', async () => {
    const [row] = await db.query('SELECT 9007199254740991::bigint AS big');
    expect(typeof row.big).toBe('string');
    expect(bigintToNumber.from(row.big)).toBe(Number.MAX_SAFE_INTEGER);
    expect(bigintToNumber.from(null)).toBeNull();
  });

  (serverUrl() ? it.skip : it)('a second process cannot open the same PGlite data directory', async () => {
    await expect(openDatabase(loadConfig({ DATA_DIR: t.database.dataDir }))).rejects.toBeInstanceOf(DataDirectoryBusyError);
    const [row] = await db.query('SELECT 1 AS ok');
    expect(row.ok).toBe(1);
  });
});

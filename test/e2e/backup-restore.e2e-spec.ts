import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { PROCESSES_TIMEOUT_MS, runNode, ServerProcess, setUpFirstOwner, startServer } from '../utils/processes';
import { createTestDatabase, serverUrl, TestDatabase, withAdmin, withDatabase } from '../utils/test-database';

type Json = Record<string, unknown>;
const onPostgres = Boolean(serverUrl());

/** A PostgreSQL database with nothing in it (not the suite's migrated template). */
async function emptyPostgres(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `ap_restore_${process.pid}_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  await withAdmin(serverUrl()!, (client) => client.query(`CREATE DATABASE "${name}"`));
  return {
    url: withDatabase(serverUrl()!, name),
    drop: () => withAdmin(serverUrl()!, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}

/** Everything a client can read back, to compare before and after. */
async function readBack(url: string, key: string): Promise<Json> {
  const get = async (path: string) => (await (await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Json;
  const sessions = (await get('/api/v0/sessions?limit=100')) as { sessions: Array<{ sessionId: string }> };
  const messages: Json = {};
  for (const { sessionId } of sessions.sessions) messages[sessionId] = await get(`/api/v0/sessions/${sessionId}/messages?limit=100`);
  return {
    sessions,
    messages,
    events: await get('/api/v0/events?limit=100'),
    keys: await get('/settings/api-keys?scope=organization'),
    controls: await get('/api/v0/organization/enterprise-controls'),
  };
}

/**
 * Backups as an operator takes them: `cli backup` while the server runs, `cli restore` into a new place, the server
 * started there serving the same data; and every refusal before anything is written.
 */
describe('Backup and restore (real processes)', () => {
  let source: TestDatabase;
  let server: ServerProcess | undefined;
  let key: string;
  let before: Json;
  let folder: string;
  const cleanups: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'backup-'));
    source = await createTestDatabase();
    server = await startServer([], { ...source.env, LOCAL_AGENTS: 'off' });
    key = await setUpFirstOwner(server);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    for (const title of ['first', 'second']) {
      const created = await fetch(`${server.url}/api/v0/sessions`, { method: 'POST', headers, body: JSON.stringify({ title }) });
      const { sessionId } = (await created.json()) as { sessionId: string };
      for (const text of ['hello', 'line one\nline two "quoted" \\ ✓ 😀']) {
        await fetch(`${server.url}/api/v0/sessions/${sessionId}/messages`, { method: 'POST', headers, body: JSON.stringify({ text }) });
      }
    }
    // A value encrypted with the secrets key: the backup needs that key beside it.
    const controls = await fetch(`${server.url}/api/v0/organization/enterprise-controls`, {
      method: 'PATCH',
      headers,
      body: JSON.stringify({
        settings: { customModels: [{ id: 'house', model: 'house-model', baseUrl: 'https://models.example.com/v1', apiKey: 'sk-house-0000000000' }] },
      }),
    });
    expect(controls.status).toBe(200);
    before = await readBack(server.url, key);
  }, PROCESSES_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop();
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    await source.drop();
    await rm(folder, { recursive: true, force: true });
  });

  const cli = (env: Record<string, string>, ...args: string[]) => runNode('dist/cli/main.js', args, env);

  it(
    'backs up while the server runs, and restores into a new place that serves the same data; refusals change nothing',
    async () => {
      const file = join(folder, 'acme.jsonl.gz');
      const taken = await cli({ ...source.env }, 'backup', file);
      expect([taken.code, taken.stderr]).toEqual([0, '']);
      const summary = JSON.parse(taken.stdout) as { rows: number; tables: Record<string, number>; needs: string };
      expect(summary.tables).toMatchObject({ sessions: 2, messages: 4, organizations: 1 });
      expect(summary.needs).toMatch(/secrets key [0-9a-f]{16}/);
      // The server kept serving meanwhile.
      expect((await fetch(`${server!.url}/healthz`)).status).toBe(200);

      // The target: a new data directory, or an empty PostgreSQL database.
      const targetDir = await mkdtemp(join(tmpdir(), 'restored-'));
      cleanups.push(() => rm(targetDir, { recursive: true, force: true }));
      let target: Record<string, string>;
      if (onPostgres) {
        const empty = await emptyPostgres();
        cleanups.push(empty.drop);
        target = { DATABASE_URL: empty.url, DATA_DIR: targetDir };
      } else {
        target = { DATA_DIR: targetDir };
      }
      const nothingWritten = async () => {
        if (!onPostgres) return expect(existsSync(join(targetDir, 'pgdata'))).toBe(false);
        const tables = await withAdmin(target.DATABASE_URL, (client) => client.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`));
        expect(tables.rows[0].n).toBe(0);
      };

      // Without the key its encrypted values need (another SECRETS_KEY, or no secrets.key): refused, naming the key.
      const wrongKey: Record<string, string> = onPostgres ? { SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') } : {};
      const keyless = await cli({ ...target, ...wrongKey }, 'restore', file);
      expect(keyless.code).toBe(1);
      expect(keyless.stderr).toMatch(/encrypted with the secrets key [0-9a-f]{16}.*Nothing was changed/);
      await nothingWritten();

      const keyed: Record<string, string> = onPostgres ? { ...target, SECRETS_KEY: source.env.SECRETS_KEY } : target;
      if (!onPostgres) await copyFile(join(source.dataDir, 'secrets.key'), join(targetDir, 'secrets.key'));

      // A file cut short, and one from a release with a migration this one does not know: refused.
      const whole = await readFile(file);
      const cut = join(folder, 'cut.jsonl.gz');
      await writeFile(cut, gzipSync(gunzipSync(whole).subarray(0, Math.floor(gunzipSync(whole).length * 0.6))));
      const cutShort = await cli(keyed, 'restore', cut);
      expect(cutShort.code).toBe(1);
      expect(cutShort.stderr).toMatch(/cut short/);
      const lines = gunzipSync(whole).toString('utf8').split('\n');
      const header = JSON.parse(lines[0]) as { migrations: string[] };
      header.migrations.push('FromTheFuture1999999999999');
      const newer = join(folder, 'newer.jsonl.gz');
      await writeFile(newer, gzipSync([JSON.stringify(header), ...lines.slice(1)].join('\n')));
      const fromNewer = await cli(keyed, 'restore', newer);
      expect(fromNewer.code).toBe(1);
      expect(fromNewer.stderr).toMatch(/FromTheFuture1999999999999.*Nothing was changed/);
      await nothingWritten();

      const restored = await cli(keyed, 'restore', file);
      expect([restored.code, restored.stderr]).toEqual([0, '']);
      expect((JSON.parse(restored.stdout) as { tables: Record<string, number> }).tables).toEqual(summary.tables);
      // Into something that is no longer empty: refused.
      const again = await cli(keyed, 'restore', file);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/already|not empty/);

      const there = await startServer([], { ...keyed, LOCAL_AGENTS: 'off' });
      try {
        expect(await readBack(there.url, key)).toEqual(before);
        // It goes on from there: new writes take the next numbers.
        const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
        const created = await fetch(`${there.url}/api/v0/sessions`, { method: 'POST', headers, body: JSON.stringify({ title: 'after the restore' }) });
        expect(created.status).toBe(201);
      } finally {
        await there.stop();
      }
    },
    PROCESSES_TIMEOUT_MS,
  );

  (onPostgres ? it : it.skip)(
    'moves an embedded database into PostgreSQL while its server runs, checking every table',
    async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'embedded-'));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      const embedded = await startServer([], { DATA_DIR: dataDir, LOCAL_AGENTS: 'off' });
      let ownerKey: string;
      try {
        ownerKey = await setUpFirstOwner(embedded, 'solo');
        const headers = { authorization: `Bearer ${ownerKey}`, 'content-type': 'application/json' };
        const created = await fetch(`${embedded.url}/api/v0/sessions`, { method: 'POST', headers, body: JSON.stringify({ title: 'outgrown' }) });
        const { sessionId } = (await created.json()) as { sessionId: string };
        await fetch(`${embedded.url}/api/v0/sessions/${sessionId}/messages`, { method: 'POST', headers, body: JSON.stringify({ text: 'to PostgreSQL' }) });
        const embeddedView = await readBack(embedded.url, ownerKey);

        const empty = await emptyPostgres();
        cleanups.push(empty.drop);
        // The embedded server runs: the CLI goes through it for the snapshot.
        const moved = await cli({ DATA_DIR: dataDir }, 'move-to-postgres', empty.url);
        expect([moved.code, moved.stderr]).toEqual([0, '']);
        const report = JSON.parse(moved.stdout) as { tables: Record<string, number>; next: string };
        expect(report.tables).toMatchObject({ sessions: 1, messages: 1, organizations: 1 });
        expect(report.next).toMatch(/SECRETS_KEY set to the contents of .*secrets\.key/);

        const secretsKey = (await readFile(join(dataDir, 'secrets.key'), 'utf8')).trim();
        const onPg = await startServer([], { DATABASE_URL: empty.url, SECRETS_KEY: secretsKey, DATA_DIR: dataDir, LOCAL_AGENTS: 'off' });
        try {
          expect(await readBack(onPg.url, ownerKey)).toEqual(embeddedView);
        } finally {
          await onPg.stop();
        }
      } finally {
        await embedded.stop();
      }
    },
    PROCESSES_TIMEOUT_MS,
  );
});

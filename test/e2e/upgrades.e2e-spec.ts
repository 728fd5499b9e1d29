import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/app-config';
import { generateApiKey } from '../../src/modules/auth/domain/api-key-secret';
import { openDatabase } from '../../src/platform/database/open-database';
import { PROCESSES_TIMEOUT_MS, runNode, startServer } from '../utils/processes';
import { createTestDatabase, serverUrl, withAdmin, withDatabase } from '../utils/test-database';

const onPostgres = Boolean(serverUrl());

/** Where a database of an old release is made: a new data directory, or a new empty PostgreSQL database. */
async function emptyTarget(): Promise<{ env: Record<string, string>; drop: () => Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'upgrade-'));
  if (!onPostgres) return { env: { DATA_DIR: dataDir }, drop: () => rm(dataDir, { recursive: true, force: true }) };
  const name = `ap_upgrade_${process.pid}_${Date.now()}`;
  await withAdmin(serverUrl()!, (client) => client.query(`CREATE DATABASE "${name}"`));
  return {
    env: { DATABASE_URL: withDatabase(serverUrl()!, name), DATA_DIR: dataDir, SECRETS_KEY: randomBytes(32).toString('base64') },
    drop: async () => {
      await withAdmin(serverUrl()!, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A database as the first releases left it, then today's server on it; and a database of a newer release refused. */
describe('Upgrades (real processes)', () => {
  it(
    "starts on a database made by the first release's schema (its first two migrations): migrations run forward, nothing is lost",
    async () => {
      const target = await emptyTarget();
      try {
        // The first release's schema, with its rows written as that release wrote them.
        const old = await openDatabase(loadConfig({ ...target.env, LOG_LEVEL: 'silent' }), { migrations: 2 });
        const [orgId, userId, keyId, sessionId, first, second] = Array.from({ length: 6 }, () => randomUUID());
        const key = generateApiKey();
        try {
          await old.dataSource.transaction(async (manager) => {
            await manager.query(`INSERT INTO organizations (id, slug, name) VALUES ($1, 'old', 'Old Org')`, [orgId]);
            await manager.query(`INSERT INTO users (id, organization_id, email, name, role) VALUES ($1, $2, 'owner@old.example', 'Owner', 'owner')`, [
              userId,
              orgId,
            ]);
            await manager.query(`INSERT INTO api_keys (id, organization_id, user_id, name, prefix, key_hash) VALUES ($1, $2, $3, 'from 1.0', $4, $5)`, [
              keyId,
              orgId,
              userId,
              key.prefix,
              key.hash,
            ]);
            await manager.query(
              `INSERT INTO sessions (id, organization_id, owner_id, title, message_count, last_message_id, last_user_seq, created_at, updated_at)
             VALUES ($1, $2, $3, 'kept since 1.0', 2, $4, 1, now() - interval '2 days', now() - interval '2 days')`,
              [sessionId, orgId, userId, second],
            );
            for (const [id, seq, role, text] of [
              [first, 1, 'user', 'hello from the first release'],
              [second, 2, 'assistant', 'still here'],
            ] as const) {
              await manager.query(
                `INSERT INTO messages (id, session_id, seq, role, author_id, user_message_source, content, created_at, updated_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, now() - interval '2 days', now() - interval '2 days')`,
                [id, sessionId, seq, role, role === 'user' ? userId : null, role === 'user' ? 'web' : null, JSON.stringify([{ type: 'text', text }])],
              );
            }
          });
        } finally {
          await old.close();
        }

        const server = await startServer([], target.env);
        try {
          expect(server.output()).toMatch(/Applied migrations: Computers\d+, /);
          const headers = { authorization: `Bearer ${key.key}` };
          const session = await fetch(`${server.url}/api/v0/sessions/${sessionId}`, { headers });
          expect(session.status).toBe(200);
          expect(await session.json()).toMatchObject({ sessionId, title: 'kept since 1.0', messageCount: 2, status: 'idle' });
          const keys = (await (await fetch(`${server.url}/settings/api-keys`, { headers })).json()) as { apiKeys: Array<{ id: string; name: string }> };
          expect(keys.apiKeys).toEqual([expect.objectContaining({ id: keyId, name: 'from 1.0' })]);
          // And it works on: a new message in the old session.
          const added = await fetch(`${server.url}/api/v0/sessions/${sessionId}/messages`, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: JSON.stringify({ text: 'and from today' }),
          });
          expect(added.status).toBe(200);
          expect(((await (await fetch(`${server.url}/api/v0/sessions/${sessionId}`, { headers })).json()) as { messageCount: number }).messageCount).toBe(3);
        } finally {
          await server.stop();
        }
      } finally {
        await target.drop();
      }
    },
    PROCESSES_TIMEOUT_MS,
  );

  it(
    'refuses to start on a database a newer release migrated, naming its migration, and changes nothing',
    async () => {
      const database = await createTestDatabase();
      try {
        const config = loadConfig({ ...database.env, LOG_LEVEL: 'silent' });
        const opened = await openDatabase(config);
        const count = async () => Number(((await opened.dataSource.query('SELECT count(*) AS n FROM migrations')) as Array<{ n: string }>)[0].n);
        let before: number;
        try {
          await opened.dataSource.query(`INSERT INTO migrations (timestamp, name) VALUES (1999999999999, 'FromTheFuture1999999999999')`);
          before = await count();
        } finally {
          await opened.close();
        }
        const started = await runNode('dist/main.js', [], { ...database.env, PORT: '0' });
        expect(started.code).toBe(1);
        expect(started.stderr).toMatch(/migrated by a newer release .*FromTheFuture1999999999999.*Nothing was changed/);
        const again = await openDatabase(config, { migrate: false });
        try {
          expect(Number(((await again.dataSource.query('SELECT count(*) AS n FROM migrations')) as Array<{ n: string }>)[0].n)).toBe(before);
        } finally {
          await again.close();
        }
      } finally {
        await database.drop();
      }
    },
    PROCESSES_TIMEOUT_MS,
  );
});

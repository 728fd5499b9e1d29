import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { SecretBox } from '../../src/platform/secrets/secret-box';
import { createOrganization, createUser } from '../utils/factories';
import { startServer } from '../utils/processes';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase, serverUrl } from '../utils/test-database';
import { expectV0Error } from '../utils/v0-errors';
import { CONTROLS, controlsFixture, Json } from '../utils/fixtures/enterprise-controls';

const KEY = 'sk-live-0123456789abcdef-WXYZ';
const LLAMA = { id: 'custom:llama', model: 'llama-3.1-70b', baseUrl: 'https://llm.example.com/v1', apiKey: KEY };

/**
 * The enterprise controls as stored: custom model keys masked in every answer, encrypted at rest and kept out of the
 * logs; the controls across a restart, a lost encrypting key, a server killed mid-change, and several instances.
 */
describe('Enterprise controls', () => {
  const fixture = controlsFixture();
  const { change, admins } = fixture;
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

  describe('custom model keys', () => {
    it('are answered masked everywhere, and stored encrypted, not in plain text', async () => {
      const { owner } = await admins();
      const res = await change(owner, { customModels: [LLAMA] }).expect(200);
      expect(res.body.settings.customModels).toEqual([{ ...LLAMA, apiKey: '****WXYZ' }]);
      const answers = [
        res,
        await t.http().get(CONTROLS).set(owner.auth),
        await t.http().get(`${CONTROLS}/history`).set(owner.auth),
        await t.http().get(`${CONTROLS}/history/1`).set(owner.auth),
        await t.http().get('/api/v0/agent/policy').set(owner.auth),
      ];
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        expect(JSON.stringify(answer.body)).not.toContain('0123456789abcdef');
        expect(JSON.stringify(answer.body)).toContain('****WXYZ');
      }
      const [row] = await t.app
        .get(DataSource)
        .query(`SELECT settings::text AS settings, diff::text AS diff FROM enterprise_control_revisions WHERE organization_id = $1`, [owner.organizationId]);
      expect(row.settings).not.toContain('0123456789abcdef');
      expect(row.diff).not.toContain('0123456789abcdef');
      const envelope = JSON.parse(row.settings).customModels[0].apiKey as string;
      expect(envelope).toMatch(/^enc:v1:/);
      expect(t.app.get(SecretBox).decrypt(envelope, owner.organizationId)).toBe(KEY);
    });

    it('sending the masked value back keeps the stored key; a new key replaces it and shows in the diff', async () => {
      const { owner } = await admins();
      await change(owner, { customModels: [LLAMA] }).expect(200);
      const read = await t.http().get(CONTROLS).set(owner.auth).expect(200);
      const masked = read.body.settings.customModels as Json[];
      const kept = await change(owner, { customModels: masked }).expect(200);
      expect(kept.body.revision).toBe(1);
      const renamed = await change(owner, { customModels: [{ ...masked[0], displayName: 'Llama' }] }).expect(200);
      expect(renamed.body.revision).toBe(2);
      const stored = async () => {
        const rows = await t.app
          .get(DataSource)
          .query(`SELECT settings::text AS settings FROM enterprise_control_revisions WHERE organization_id = $1 ORDER BY revision DESC LIMIT 1`, [
            owner.organizationId,
          ]);
        return t.app.get(SecretBox).decrypt(JSON.parse(rows[0].settings).customModels[0].apiKey, owner.organizationId);
      };
      expect(await stored()).toBe(KEY);

      // Same last four characters: only the diff tells the key changed.
      const rotated = 'sk-live-fedcba9876543210-WXYZ';
      const replaced = await change(owner, { customModels: [{ ...renamed.body.settings.customModels[0], apiKey: rotated }] }).expect(200);
      expect(replaced.body.revision).toBe(3);
      expect(await stored()).toBe(rotated);
      const diff = await t.http().get(`${CONTROLS}/history/3`).set(owner.auth).expect(200);
      expect(diff.body.diff).toEqual([{ op: 'replace', path: '/customModels/0/apiKey', value: '****WXYZ' }]);
    });

    it('never reach the logs, even at trace level and in refused changes', async () => {
      const database = await createTestDatabase();
      const setup = await startTestApp({}, database);
      const owner = await createUser(setup, Role.Owner);
      await setup.close();
      const server = await startServer([], { ...database.env, LOG_LEVEL: 'trace' });
      try {
        const send = (settings: unknown) =>
          fetch(`${server.url}${CONTROLS}`, {
            method: 'PATCH',
            headers: { ...owner.auth, 'content-type': 'application/json' },
            body: JSON.stringify({ settings }),
          });
        expect((await send({ customModels: [LLAMA] })).status).toBe(200);
        expect((await send({ customModels: [{ ...LLAMA, apiKey: `${KEY}-2`, index: -1 }] })).status).toBe(400);
        expect((await send({ customModels: [{ ...LLAMA, apiKey: `${KEY}-3`, extra: 1 }], sandbox: null })).status).toBe(400);
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(server.output()).toContain('"security":"controls.revised"');
        expect(server.output()).not.toContain('0123456789abcdef');
      } finally {
        await server.stop();
        await database.drop();
      }
    });
  });

  it('controls persist: a new instance on the same database enforces the latest revision', async () => {
    const database = await createTestDatabase();
    const first = await startTestApp({}, database);
    const owner = await createUser(first, Role.Owner);
    await first
      .http()
      .patch(CONTROLS)
      .set(owner.auth)
      .send({ settings: { restrictApiKeyCreationToManagers: true, customModels: [LLAMA] } })
      .expect(200);
    // Without SECRETS_KEY the embedded database's key file is what decrypts the key after a restart.
    await first.close();
    const second = await startTestApp({}, database);
    try {
      const res = await second.http().get(CONTROLS).set(owner.auth).expect(200);
      expect(res.body).toMatchObject({ revision: 1, settings: { restrictApiKeyCreationToManagers: true, customModels: [{ apiKey: '****WXYZ' }] } });
      const kept = await second
        .http()
        .patch(CONTROLS)
        .set(owner.auth)
        .send({ settings: { customModels: res.body.settings.customModels, disableAutoUpdate: true } })
        .expect(200);
      expect(kept.body.revision).toBe(2);
    } finally {
      await second.close();
      await database.drop();
    }
  });

  it('with the encrypting key gone from SECRETS_KEY, keys read as **** and a change answers 503, changing nothing', async () => {
    const database = await createTestDatabase();
    const first = await startTestApp({ SECRETS_KEY: randomBytes(32).toString('base64') }, database);
    const owner = await createUser(first, Role.Owner);
    await first
      .http()
      .patch(CONTROLS)
      .set(owner.auth)
      .send({ settings: { customModels: [LLAMA] } })
      .expect(200);
    await first.close();
    const second = await startTestApp({ SECRETS_KEY: randomBytes(32).toString('base64') }, database);
    try {
      const read = await second.http().get(CONTROLS).set(owner.auth).expect(200);
      expect(read.body.settings.customModels[0].apiKey).toBe('****');
      const res = await second
        .http()
        .patch(CONTROLS)
        .set(owner.auth)
        .send({ settings: { ideAutoConnect: false } });
      expectV0Error(res, 503, 'secret_unreadable');
      expect(res.body.detail).toContain('custom:llama');
      expect((await second.http().get(CONTROLS).set(owner.auth).expect(200)).body.revision).toBe(1);
    } finally {
      await second.close();
      await database.drop();
    }
  });

  it('a server killed in the middle of changes loses no acknowledged revision and leaves no gap', async () => {
    const database = await createTestDatabase();
    const setup = await startTestApp({}, database);
    const owner = await createUser(setup, Role.Owner);
    await setup.close();
    const send = (url: string, i: number) =>
      fetch(`${url}${CONTROLS}`, {
        method: 'PATCH',
        headers: { ...owner.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ settings: { serviceRouterGuidance: `step ${i}` } }),
      });
    const first = await startServer([], database.env);
    const acknowledged: number[] = [];
    let refused = 0;
    try {
      // Changes keep coming, four at a time, each lane sending its next as soon as the last is answered, until the
      // server is gone: however slow the machine, the kill finds changes in flight.
      const lanes = Array.from({ length: 4 }, async (_, lane) => {
        for (let i = lane; i < 4000; i += 4) {
          const res = await send(first.url, i).catch(() => null);
          if (res?.status !== 200) {
            refused += 1;
            return;
          }
          acknowledged.push(((await res.json()) as Json).revision);
        }
      });
      const deadline = Date.now() + 20_000;
      while (acknowledged.length < 3) {
        if (Date.now() > deadline) throw new Error(`no change was acknowledged:\n${first.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      first.child.kill('SIGKILL');
      await Promise.all(lanes);
      // Every lane ended on a change the dead server did not answer.
      expect(refused).toBe(4);
    } finally {
      await first.stop();
    }
    const second = await startServer([], database.env);
    try {
      const headers = owner.auth;
      const current = (await (await fetch(`${second.url}${CONTROLS}`, { headers })).json()) as Json;
      const history = (await (await fetch(`${second.url}${CONTROLS}/history?limit=100`, { headers })).json()) as Json;
      const revisions = (history.changes as Json[]).map((c) => c.revision as number);
      // Gapless, the newest in force, and every change the dead server acknowledged is there.
      expect(revisions).toEqual(Array.from({ length: revisions.length }, (_, i) => revisions.length - i));
      expect(current.revision).toBe(revisions.length);
      expect(current.settings.serviceRouterGuidance).toBe((history.changes as Json[])[0]?.settings.serviceRouterGuidance ?? '');
      for (const revision of acknowledged) expect(revisions).toContain(revision);
      expect((await send(second.url, 99)).status).toBe(200);
    } finally {
      await second.stop();
      await database.drop();
    }
  });

  (serverUrl() ? describe : describe.skip)('on several instances (PostgreSQL)', () => {
    it('a change through one instance is in force on another, and their concurrent changes are consecutive revisions', async () => {
      const database = await createTestDatabase();
      const env = { CONTROLS_CACHE_MS: '0' };
      const a = await startTestApp(env, database);
      const b = await startTestApp(env, database);
      try {
        const org = await createOrganization(a);
        const owner = await createUser(a, Role.Owner, org);
        const member = await createUser(a, Role.Member, org);
        await a
          .http()
          .patch(CONTROLS)
          .set(owner.auth)
          .send({ settings: { restrictApiKeyCreationToManagers: true } })
          .expect(200);
        expectV0Error(await b.http().post('/settings/api-keys').set(member.auth).send({ name: 'mine' }), 403, 'api_key_creation_restricted');

        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            (i % 2 ? a : b)
              .http()
              .patch(CONTROLS)
              .set(owner.auth)
              .send({ settings: { enabledPlugins: { [`p${i}@m`]: true } } }),
          ),
        );
        expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
        const revisions = await a.app
          .get(DataSource)
          .query(`SELECT revision FROM enterprise_control_revisions WHERE organization_id = $1 ORDER BY revision`, [org.id]);
        expect(revisions.map((r: { revision: number }) => r.revision)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
      } finally {
        await a.close();
        await b.close();
        await database.drop();
      }
    });
  });
});

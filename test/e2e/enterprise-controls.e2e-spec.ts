import Ajv, { ValidateFunction } from 'ajv';
import { randomBytes } from 'node:crypto';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import type { StoredEvent } from '../../src/platform/events';
import { defaultSettings } from '../../src/modules/enterprise-controls/domain/settings';
import { isIpOrCidr } from '../../src/platform/http/json-schema';
import { SecretBox } from '../../src/platform/secrets/secret-box';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startServer } from '../utils/processes';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase, serverUrl } from '../utils/test-database';
import { expectV0Error } from '../utils/v0-errors';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;

const CONTROLS = '/api/v0/organization/enterprise-controls';
const KEY = 'sk-live-0123456789abcdef-WXYZ';
const LLAMA = { id: 'custom:llama', model: 'llama-3.1-70b', baseUrl: 'https://llm.example.com/v1', apiKey: KEY };

describe('Enterprise controls', () => {
  let t: TestApp;
  let validate: Record<'controls' | 'history' | 'revision', ValidateFunction>;

  beforeAll(async () => {
    t = await startTestApp();
    const doc = (await t.http().get('/docs-json').expect(200)).body as Json;
    const ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addFormat('uuid', /^[0-9a-f-]{36}$/i);
    ajv.addFormat('lowercase-uuid', /^[0-9a-f-]{36}$/);
    ajv.addFormat('uri', (value: string) => URL.canParse(value));
    ajv.addFormat('http-base-url', (value: string) => /^https?:\/\/[^/?#\s]+[^?#\s]*$/.test(value) && new URL(value).href === value);
    ajv.addFormat('email', /@/);
    ajv.addFormat('date-time', (value: string) => !Number.isNaN(Date.parse(value)));
    ajv.addFormat('ip-or-cidr', isIpOrCidr);
    ajv.addSchema({ ...doc, $id: 'openapi' });
    const path = (p: string) => `openapi#/paths/${p.replace(/\//g, '~1')}/get/responses/200/content/application~1json/schema`;
    validate = {
      controls: ajv.compile({ $ref: path(CONTROLS) }),
      history: ajv.compile({ $ref: path(`${CONTROLS}/history`) }),
      revision: ajv.compile({ $ref: path(`${CONTROLS}/history/{revision}`) }),
    };
  });

  afterAll(() => t.close());

  function expectValid(which: keyof typeof validate, body: unknown) {
    validate[which](body);
    expect(validate[which].errors ?? []).toEqual([]);
  }

  const change = (user: TestUser, settings: unknown, headers: Record<string, string> = {}) =>
    t
      .http()
      .patch(CONTROLS)
      .set(user.auth)
      .set(headers)
      .send({ settings } as object);

  async function admins(): Promise<{ owner: TestUser; manager: TestUser; member: TestUser }> {
    const org = await createOrganization(t);
    return { owner: await createUser(t, Role.Owner, org), manager: await createUser(t, Role.Manager, org), member: await createUser(t, Role.Member, org) };
  }

  it('a new organization has the documented defaults at revision 0 and no history', async () => {
    const { owner } = await admins();
    const res = await t.http().get(CONTROLS).set(owner.auth).expect(200);
    expect(res.headers.etag).toBe('"0"');
    expect(res.body).toEqual({ revision: 0, settings: defaultSettings(), user: null, updatedAt: null });
    expectValid('controls', res.body);
    const history = await t.http().get(`${CONTROLS}/history`).set(owner.auth).expect(200);
    expect(history.body).toEqual({ changes: [], pagination: { hasMore: false, nextCursor: null } });
  });

  it('a change becomes revision 1, made by the caller, and is listed in the history with its snapshot', async () => {
    const { manager } = await admins();
    const before = Date.now();
    const res = await change(manager, { restrictMemberVisibility: true, sandbox: { enabled: true, network: { httpProxyPort: 8080 } } }).expect(200);
    expect(res.headers.etag).toBe('"1"');
    expect(res.body.revision).toBe(1);
    expect(res.body.user).toEqual({ id: manager.userId, email: expect.stringContaining('@'), name: 'A manager' });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(before - 5);
    // Merged, not replaced: the sandbox's other fields keep their defaults.
    expect(res.body.settings.sandbox).toEqual({
      ...defaultSettings().sandbox,
      enabled: true,
      network: { ...defaultSettings().sandbox.network, httpProxyPort: 8080 },
    });
    expectValid('controls', res.body);

    const current = await t.http().get(CONTROLS).set(manager.auth).expect(200);
    expect(current.body).toEqual(res.body);
    const history = await t.http().get(`${CONTROLS}/history`).set(manager.auth).expect(200);
    expectValid('history', history.body);
    expect(history.body.changes).toEqual([{ revision: 1, settings: res.body.settings, user: res.body.user, updatedAt: res.body.updatedAt }]);
    expect(history.body.changes[0].updatedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('reading one revision shows what it changed from the one before, as JSON Patch operations', async () => {
    const { owner, manager } = await admins();
    await change(owner, { commandBlocklist: ['rm -rf /'], sessionRetentionDays: 90 }).expect(200);
    await change(manager, { commandBlocklist: ['rm -rf /', 'curl * | sh'], sessionRetentionDays: null, enabledPlugins: { 'lint@acme': true } }).expect(200);

    const first = await t.http().get(`${CONTROLS}/history/1`).set(owner.auth).expect(200);
    expectValid('revision', first.body);
    expect(first.body.user.id).toBe(owner.userId);
    expect(first.body.diff).toEqual(
      expect.arrayContaining([
        { op: 'add', path: '/commandBlocklist/-', value: 'rm -rf /' },
        { op: 'add', path: '/sessionRetentionDays', value: 90 },
      ]),
    );
    expect(first.body.diff).toHaveLength(2);
    const second = await t.http().get(`${CONTROLS}/history/2`).set(owner.auth).expect(200);
    expect(second.body.user.id).toBe(manager.userId);
    expect(second.body.diff).toEqual(
      expect.arrayContaining([
        { op: 'add', path: '/commandBlocklist/-', value: 'curl * | sh' },
        { op: 'remove', path: '/sessionRetentionDays' },
        { op: 'add', path: '/enabledPlugins/lint@acme', value: true },
      ]),
    );
    expect(second.body.settings.sessionRetentionDays).toBeUndefined();
  });

  it('a change that alters nothing creates no revision', async () => {
    const { owner } = await admins();
    await change(owner, { ideAutoConnect: false }).expect(200);
    const again = await change(owner, { ideAutoConnect: false, cloudSessionSync: true, sandbox: {} }).expect(200);
    expect(again.body.revision).toBe(1);
    expect(again.headers.etag).toBe('"1"');
    const empty = await change(owner, {}).expect(200);
    expect(empty.body.revision).toBe(1);
    const history = await t.http().get(`${CONTROLS}/history`).set(owner.auth).expect(200);
    expect(history.body.changes).toHaveLength(1);
  });

  it('a merge patch replaces arrays whole, merges maps, and removes map entries with null', async () => {
    const { owner } = await admins();
    await change(owner, { commandAllowlist: ['ls', 'git status'], enabledPlugins: { 'a@m': true, 'b@m': false } }).expect(200);
    const res = await change(owner, { commandAllowlist: ['pwd'], enabledPlugins: { 'a@m': null, 'c@m': true } }).expect(200);
    expect(res.body.settings.commandAllowlist).toEqual(['pwd']);
    expect(res.body.settings.enabledPlugins).toEqual({ 'b@m': false, 'c@m': true });
  });

  it('application/merge-patch+json is accepted as well as application/json', async () => {
    const { owner } = await admins();
    const res = await t
      .http()
      .patch(CONTROLS)
      .set(owner.auth)
      .set('content-type', 'application/merge-patch+json')
      .send(JSON.stringify({ settings: { wikiCloudSync: false } }));
    expect(res.status).toBe(200);
    expect(res.body.settings.wikiCloudSync).toBe(false);
  });

  describe('If-Match', () => {
    it('a change based on the revision in force applies; one based on an older revision answers 412 and changes nothing', async () => {
      const { owner, manager } = await admins();
      const read = await t.http().get(CONTROLS).set(owner.auth).expect(200);
      await change(owner, { disableAutoUpdate: true }, { 'If-Match': read.headers.etag }).expect(200);
      const stale = await change(manager, { disableAutoUpdate: false }, { 'If-Match': read.headers.etag });
      expectV0Error(stale, 412, 'revision_mismatch');
      expect(stale.body.metadata.currentRevision).toBe(1);
      const now = await t.http().get(CONTROLS).set(owner.auth).expect(200);
      expect(now.body).toMatchObject({ revision: 1, settings: { disableAutoUpdate: true } });
      await change(manager, { disableAutoUpdate: false }, { 'If-Match': now.headers.etag }).expect(200);
    });

    it('two admins changing the same revision with If-Match: one lands, the other gets 412', async () => {
      const { owner, manager } = await admins();
      const results = await Promise.all([
        change(owner, { serviceRouterGuidance: 'from the owner' }, { 'If-Match': '"0"' }),
        change(manager, { serviceRouterGuidance: 'from the manager' }, { 'If-Match': '"0"' }),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 412]);
      const history = await t.http().get(`${CONTROLS}/history`).set(owner.auth).expect(200);
      expect(history.body.changes).toHaveLength(1);
    });
  });

  it('concurrent changes without If-Match all land, as consecutive revisions with no gaps', async () => {
    const { owner, manager } = await admins();
    const n = 12;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => change(i % 2 ? owner : manager, { enabledPlugins: { [`plugin-${i}@m`]: true } })));
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
    expect(results.map((r) => r.body.revision).sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    const current = await t.http().get(CONTROLS).set(owner.auth).expect(200);
    expect(current.body.revision).toBe(n);
    expect(Object.keys(current.body.settings.enabledPlugins)).toHaveLength(n);
    const history = await t.http().get(`${CONTROLS}/history?limit=100`).set(owner.auth).expect(200);
    expect(history.body.changes.map((c: Json) => c.revision)).toEqual(Array.from({ length: n }, (_, i) => n - i));
  });

  it('history pages newest first and stays stable while revisions are added', async () => {
    const { owner } = await admins();
    for (let i = 1; i <= 5; i++) await change(owner, { serviceRouterGuidance: `v${i}` }).expect(200);
    const first = await t.http().get(`${CONTROLS}/history?limit=2`).set(owner.auth).expect(200);
    expect(first.body.changes.map((c: Json) => c.revision)).toEqual([5, 4]);
    expect(first.body.pagination.hasMore).toBe(true);
    await change(owner, { serviceRouterGuidance: 'v6' }).expect(200);
    const second = await t.http().get(`${CONTROLS}/history?limit=2&cursor=${first.body.pagination.nextCursor}`).set(owner.auth).expect(200);
    expect(second.body.changes.map((c: Json) => c.revision)).toEqual([3, 2]);
    const third = await t.http().get(`${CONTROLS}/history?limit=2&cursor=${second.body.pagination.nextCursor}`).set(owner.auth).expect(200);
    expect(third.body.changes.map((c: Json) => c.revision)).toEqual([1]);
    expect(third.body.pagination).toEqual({ hasMore: false, nextCursor: null });
    expect(third.body.changes[0].settings.serviceRouterGuidance).toBe('v1');
  });

  it('owners and managers only: members and guests get 403, other organizations see nothing of it', async () => {
    const { owner, member } = await admins();
    const guest = await createUser(t, Role.Guest, { id: owner.organizationId, slug: owner.organizationSlug });
    await change(owner, { ideAutoConnect: false }).expect(200);
    for (const user of [member, guest]) {
      expectV0Error(await t.http().get(CONTROLS).set(user.auth), 403, 'insufficient_role');
      expectV0Error(await change(user, { ideAutoConnect: true }), 403, 'insufficient_role');
      expectV0Error(await t.http().get(`${CONTROLS}/history`).set(user.auth), 403, 'insufficient_role');
      expectV0Error(await t.http().get(`${CONTROLS}/history/1`).set(user.auth), 403, 'insufficient_role');
    }
    const outsider = await createUser(t, Role.Owner);
    expect((await t.http().get(`${CONTROLS}/history`).set(outsider.auth).expect(200)).body.changes).toEqual([]);
    expectV0Error(await t.http().get(`${CONTROLS}/history/1`).set(outsider.auth), 404, 'revision_not_found');
    expect((await t.http().get(CONTROLS).set(outsider.auth).expect(200)).body.settings.ideAutoConnect).toBe(true);
  });

  it('raises controls.revised with the change, naming the settings it changed', async () => {
    const { owner } = await admins();
    const seen: Array<StoredEvent<'controls.revised'>> = [];
    const listener = (event: StoredEvent<'controls.revised'>) => seen.push(event);
    t.app.get(EventEmitter2).on('controls.revised', listener);
    try {
      await change(owner, { mcpPolicy: { enabled: false }, ideAutoConnect: false }).expect(200);
      await change(owner, { mcpPolicy: { enabled: false } }).expect(200);
    } finally {
      t.app.get(EventEmitter2).off('controls.revised', listener);
    }
    const mine = seen.filter((event) => event.organizationId === owner.organizationId);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ data: { revision: 1, userId: owner.userId }, actor: { kind: 'user', userId: owner.userId, role: 'owner' } });
    expect([...mine[0].data.changedSettings].sort()).toEqual(['ideAutoConnect', 'mcpPolicy']);
  });

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

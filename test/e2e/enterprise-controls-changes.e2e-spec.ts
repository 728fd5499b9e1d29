import Ajv, { ValidateFunction } from 'ajv';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Role } from '../../src/modules/auth';
import { EventLog, type StoredEvent } from '../../src/platform/events';
import { defaultSettings } from '../../src/modules/enterprise-controls/domain/settings';
import { isIpOrCidr } from '../../src/platform/http/json-schema';
import { createUser } from '../utils/factories';
import { until } from '../utils/polling';
import { TestApp } from '../utils/test-app';
import { expectV0Error } from '../utils/v0-errors';
import { CONTROLS, controlsFixture, Json } from '../utils/fixtures/enterprise-controls';

/** The enterprise controls: reading them, changing them as revisions, their history, If-Match, who may, and the event a change raises. */
describe('Enterprise controls', () => {
  const fixture = controlsFixture();
  const { change, admins } = fixture;
  let t: TestApp;
  let validate: Record<'controls' | 'history' | 'revision', ValidateFunction>;

  beforeAll(async () => {
    ({ t } = fixture);
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

  function expectValid(which: keyof typeof validate, body: unknown) {
    validate[which](body);
    expect(validate[which].errors ?? []).toEqual([]);
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
      // Emitted once numbered, just after the answer; the log (a read settles first) says the second change raised none.
      await until(
        async () => seen,
        (list) => list.some((event) => event.organizationId === owner.organizationId),
        'the event',
      );
      const logged = await t.app.get(EventLog).read(owner.organizationId, { after: 0, limit: 100, types: ['controls.revised'] });
      expect(logged).toHaveLength(1);
    } finally {
      t.app.get(EventEmitter2).off('controls.revised', listener);
    }
    const mine = seen.filter((event) => event.organizationId === owner.organizationId);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ data: { revision: 1, userId: owner.userId }, actor: { kind: 'user', userId: owner.userId, role: 'owner' } });
    expect([...mine[0].data.changedSettings].sort()).toEqual(['ideAutoConnect', 'mcpPolicy']);
  });
});

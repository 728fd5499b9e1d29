import { randomUUID } from 'node:crypto';
import { ApiKeysService, Role } from '../../src/modules/auth';
import { encodeCursor } from '../../src/platform/http/cursor';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { expectStatus, expectV0Error } from '../utils/v0-errors';
import { TestApp } from '../utils/test-app';
import { CONTROLS, controlsInputFixture, Headers, HISTORY, Json, Org, POLICY } from '../utils/fixtures/enterprise-controls-input';

/** The enterprise controls API's preconditions (If-Match), its history of revisions, and roles and credentials. */

describe('Enterprise controls API (v0): input, limits, preconditions and roles', () => {
  const fixture = controlsInputFixture();
  const { http, expectValid, freshOwner, read, patch, change, refused, refusedPatch, expectInvalid } = fixture;
  let t: TestApp;
  let owner: TestUser;
  beforeAll(() => ({ t, owner } = fixture));

  // --- If-Match ----------------------------------------------------------------------------------

  describe('If-Match', () => {
    it.each([['abc'], ['"3'], ['W/'], ['3"'], ['""'], ['"1", abc'], ['"-1"'], ['"1.0"'], ['W/"x"'], ['"12345678901"']])(
      'a malformed If-Match %j: 400 naming If-Match',
      async (ifMatch) => {
        const res = await refusedPatch({ restrictMemberVisibility: true }, owner, { 'If-Match': ifMatch });
        expectInvalid(res, 'If-Match');
      },
    );

    it('a stale ETag after a change: 412 revision_mismatch with the current revision', async () => {
      const user = await freshOwner();
      await change(user, { restrictMemberVisibility: true });
      const res = await refusedPatch({ disableAutoUpdate: true }, user, { 'If-Match': '"0"' });
      expectV0Error(res, 412, 'revision_mismatch');
      expect(res.body.metadata.currentRevision).toBe(1);
    });

    it('a stale ETag is 412 even for a change that alters nothing', async () => {
      const user = await freshOwner();
      await change(user, { restrictMemberVisibility: true });
      expectV0Error(await refusedPatch({}, user, { 'If-Match': '"0"' }), 412, 'revision_mismatch');
    });

    it('an ETag of a revision that does not exist yet: 412', async () => {
      const user = await freshOwner();
      expectV0Error(await refusedPatch({ disableAutoUpdate: true }, user, { 'If-Match': '"5"' }), 412, 'revision_mismatch');
    });

    it('a weak tag never matches, even of the current revision: 412', async () => {
      const user = await freshOwner();
      await change(user, { restrictMemberVisibility: true });
      const res = await refusedPatch({ disableAutoUpdate: true }, user, { 'If-Match': 'W/"1"' });
      expectV0Error(res, 412, 'revision_mismatch');
      expect(res.body.metadata.currentRevision).toBe(1);
    });

    it('*, the current ETag, and a list holding it succeed', async () => {
      const user = await freshOwner();
      expect((await change(user, { restrictMemberVisibility: true }, { 'If-Match': '*' })).revision).toBe(1);
      const { headers } = await http().get(CONTROLS).set(user.auth);
      expect((await change(user, { disableAutoUpdate: true }, { 'If-Match': headers.etag as string })).revision).toBe(2);
      expect((await change(user, { wikiCloudSync: false }, { 'If-Match': '"0", "2"' })).revision).toBe(3);
    });

    it('a 412 carries the v0 error body and leaves the history as it was', async () => {
      const user = await freshOwner();
      await change(user, { restrictMemberVisibility: true });
      await change(user, { restrictMemberVisibility: false });
      const res = await refusedPatch({ sandbox: { enabled: true } }, user, { 'If-Match': '"1"' });
      expectV0Error(res, 412, 'revision_mismatch');
      expect(res.body.metadata.currentRevision).toBe(2);
      const history = await http().get(HISTORY).set(user.auth);
      expect(history.body.changes.map((c: Json) => c.revision)).toEqual([2, 1]);
    });
  });

  // --- history and revisions ---------------------------------------------------------------------

  describe('history and revisions', () => {
    /** An owner whose organization has `count` revisions. */
    async function withRevisions(count: number): Promise<TestUser> {
      const user = await freshOwner();
      for (let i = 1; i <= count; i++) await change(user, { sessionRetentionDays: i });
      return user;
    }

    it('an organization without changes has an empty history', async () => {
      const user = await freshOwner();
      const res = await http().get(HISTORY).set(user.auth);
      expectStatus(res, 200);
      expectValid('history', res.body);
      expect(res.body).toEqual({ changes: [], pagination: { hasMore: false, nextCursor: null } });
    });

    it.each([['0'], ['101'], ['abc'], ['1.5'], ['-1'], ['01'], [''], ['1e2'], [' 5']])('limit=%j: 400 naming limit', async (limit) => {
      const res = await http().get(HISTORY).query({ limit }).set(owner.auth);
      expectInvalid(res, 'limit');
    });

    it('limit given twice: 400', async () => {
      const res = await http().get(`${HISTORY}?limit=1&limit=2`).set(owner.auth);
      expectV0Error(res, 400, 'validation_failed');
    });

    it('limit 1 and 100 are accepted; pages walk newest first without repeats', async () => {
      const user = await withRevisions(3);
      expectStatus(await http().get(HISTORY).query({ limit: '100' }).set(user.auth), 200);
      const seen: number[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 5; page++) {
        const res = await http()
          .get(HISTORY)
          .query({ limit: '1', ...(cursor ? { cursor } : {}) })
          .set(user.auth);
        expectStatus(res, 200);
        expectValid('history', res.body);
        seen.push(...res.body.changes.map((c: Json) => c.revision));
        if (!res.body.pagination.hasMore) {
          expect(res.body.pagination.nextCursor).toBeNull();
          break;
        }
        cursor = res.body.pagination.nextCursor as string;
      }
      expect(seen).toEqual([3, 2, 1]);
    });

    it('a tampered cursor: 400 invalid_cursor', async () => {
      const user = await withRevisions(2);
      const first = await http().get(HISTORY).query({ limit: '1' }).set(user.auth);
      const cursor = first.body.pagination.nextCursor as string;
      const [payload, sum] = cursor.split('.');
      const flipped = (s: string) => `${s.slice(0, -1)}${s.endsWith('A') ? 'B' : 'A'}`;
      for (const bad of [flipped(cursor), `${flipped(payload)}.${sum}`, payload, `${cursor}x`, 'not-a-cursor', '']) {
        const res = await http().get(HISTORY).query({ cursor: bad }).set(user.auth);
        expect({ bad, status: res.status, code: res.body.metadata?.code }).toEqual({ bad, status: 400, code: 'invalid_cursor' });
        expectV0Error(res, 400, 'invalid_cursor');
      }
    });

    it('a cursor from another list: 400 invalid_cursor', async () => {
      const user = await withRevisions(2);
      // A real cursor of the API keys list.
      await t.app.get(ApiKeysService).create({ organizationId: user.organizationId, userId: user.userId, name: 'second' });
      const keys = await http().get('/settings/api-keys').query({ limit: '1' }).set(user.auth);
      expectStatus(keys, 200);
      const keysCursor = keys.body.pagination.nextCursor as string;
      expect(keysCursor).toEqual(expect.any(String));
      const foreign = [
        keysCursor,
        // A messages list's cursor has the same shape (one number) as this list's.
        encodeCursor(`messages:${randomUUID()}`, [2]),
        encodeCursor('sessions', [Date.now(), randomUUID()]),
      ];
      for (const cursor of foreign) {
        expectV0Error(await http().get(HISTORY).query({ cursor }).set(user.auth), 400, 'invalid_cursor');
      }
    });

    it('a well-sealed history cursor with a key of the wrong type: 400 invalid_cursor', async () => {
      const list = 'enterprise-control-history';
      for (const cursor of [encodeCursor(list, ['2']), encodeCursor(list, [1.5]), encodeCursor(list, [1, 2]), encodeCursor(list, [])]) {
        expectV0Error(await http().get(HISTORY).query({ cursor }).set(owner.auth), 400, 'invalid_cursor');
      }
    });

    it.each([['0'], ['abc'], ['-1'], ['99999999999'], ['2147483648'], ['1.0'], ['01'], ['1e0'], ['%20']])(
      'history/%s: 404 revision_not_found',
      async (revision) => {
        const user = await withRevisions(1);
        expectV0Error(await http().get(`${HISTORY}/${revision}`).set(user.auth), 404, 'revision_not_found');
      },
    );

    it('a revision past the latest: 404', async () => {
      const user = await withRevisions(1);
      expectV0Error(await http().get(`${HISTORY}/2`).set(user.auth), 404, 'revision_not_found');
      expectV0Error(await http().get(`${HISTORY}/2147483647`).set(user.auth), 404, 'revision_not_found');
    });

    it("other organizations' revisions are never visible", async () => {
      const a = await withRevisions(3);
      const b = await withRevisions(1);
      expectV0Error(await http().get(`${HISTORY}/2`).set(b.auth), 404, 'revision_not_found');
      expectV0Error(await http().get(`${HISTORY}/3`).set(b.auth), 404, 'revision_not_found');
      const own = await http().get(`${HISTORY}/1`).set(b.auth);
      expectStatus(own, 200);
      expectValid('revision', own.body);
      expect(own.body.user.id).toBe(b.userId);
      const list = await http().get(HISTORY).set(b.auth);
      expectValid('history', list.body);
      expect(list.body.changes.map((c: Json) => [c.revision, c.user.id])).toEqual([[1, b.userId]]);
      // A's cursor in B's hands pages only through B's revisions.
      const aPage = await http().get(HISTORY).query({ limit: '1' }).set(a.auth);
      const fromA = await http().get(HISTORY).query({ cursor: aPage.body.pagination.nextCursor }).set(b.auth);
      expectStatus(fromA, 200);
      expect(fromA.body.changes.map((c: Json) => c.user.id)).toEqual([b.userId]);
    });
  });

  // --- roles and credentials ---------------------------------------------------------------------

  describe('roles and credentials', () => {
    let org: Org;
    let orgOwner: TestUser;
    let manager: TestUser;
    let member: TestUser;
    let guest: TestUser;

    beforeAll(async () => {
      org = await createOrganization(t);
      orgOwner = await createUser(t, Role.Owner, org);
      manager = await createUser(t, Role.Manager, org);
      member = await createUser(t, Role.Member, org);
      guest = await createUser(t, Role.Guest, org);
      await change(orgOwner, { restrictMemberVisibility: true });
    });

    const routes = [
      ['GET', () => http().get(CONTROLS)],
      [
        'PATCH',
        () =>
          http()
            .patch(CONTROLS)
            .send({ settings: { disableAutoUpdate: true } }),
      ],
      [
        'PATCH (merge-patch+json)',
        () =>
          http()
            .patch(CONTROLS)
            .set('content-type', 'application/merge-patch+json')
            .send(JSON.stringify({ settings: { disableAutoUpdate: true } })),
      ],
      ['GET history', () => http().get(HISTORY)],
      ['GET history/1', () => http().get(`${HISTORY}/1`)],
    ] as const;

    it.each([['member'], ['guest']])('a %s: 403 insufficient_role on every route, nothing changed', async (role) => {
      const user = role === 'member' ? member : guest;
      for (const [label, request] of routes) {
        const res = await refused(orgOwner, () => request().set(user.auth));
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 403, code: 'insufficient_role' });
        expectV0Error(res, 403, 'insufficient_role');
      }
    });

    it("a member's invalid change is still 403, not 400", async () => {
      const res = await refused(orgOwner, () => patch(member, { sandbox: null }));
      expectV0Error(res, 403, 'insufficient_role');
    });

    it.each([
      ['no credentials', {}],
      ['an unknown API key', { Authorization: 'Bearer ap_0000000000000000000000000000000000000000' }],
      ['a malformed Authorization header', { Authorization: 'Basic dXNlcjpwYXNz' }],
    ])('%s: 401 on every route, nothing changed', async (_, headers: Headers) => {
      for (const [label, request] of routes) {
        const res = await refused(orgOwner, () => request().set(headers));
        expect({ label, status: res.status }).toEqual({ label, status: 401 });
        expect(Object.keys(res.body).sort()).toEqual(['detail', 'metadata', 'status', 'title']);
      }
    });

    it("a computer's agent token: 403 on every route; it reads the agent policy instead", async () => {
      const created = await http()
        .post('/api/v0/computers')
        .set(orgOwner.auth)
        .send({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
      expectStatus(created, 201);
      const token = { Authorization: `Bearer ${created.body.agentToken as string}` };
      for (const [label, request] of routes) {
        const res = await refused(orgOwner, () => request().set(token));
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 403, code: 'computer_token_not_accepted' });
      }
      const policy = await http().get(POLICY).set(token);
      expectStatus(policy, 200);
      expect(policy.body.revision).toBe((await read(orgOwner)).revision);
    });

    it("a manager reads and changes the controls, and is recorded as the change's user", async () => {
      const before = await read(manager);
      const res = await change(manager, { disableAutoUpdate: !before.settings.disableAutoUpdate });
      expect(res.revision).toBe(before.revision + 1);
      expect(res.user.id).toBe(manager.userId);
      const history = await http().get(HISTORY).query({ limit: '1' }).set(manager.auth);
      expectStatus(history, 200);
      expect(history.body.changes[0].user.id).toBe(manager.userId);
    });

    it('an owner of another organization changes only their own', async () => {
      const before = await read(orgOwner);
      const other = await freshOwner();
      await change(other, { disableAutoUpdate: true });
      expect(await read(orgOwner)).toEqual(before);
    });
  });
});

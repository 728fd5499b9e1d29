import { randomUUID } from 'node:crypto';
import { ValidateFunction } from 'ajv';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { SessionsRepository } from '../../src/modules/sessions/sessions.repository';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { expectInvalid, expectStatus, expectV0Error } from '../utils/v0-errors';
import { TestApp } from '../utils/test-app';
import { MessageView, sessionsFixture, SessionView } from '../utils/fixtures/sessions';

/** The public v0 sessions API over real HTTP: listing sessions and messages in order, page by page, and who sees what. */

describe('Sessions API (v0)', () => {
  const fixture = sessionsFixture();
  const {
    http,
    path,
    expectValid,
    ownerOfNewOrg,
    createSession,
    guestSession,
    getSession,
    listSessions,
    postMessage,
    getMessages,
    addMessage,
    readSession,
    allMessages,
    walk,
    claim,
    expectParentChain,
  } = fixture;
  let t: TestApp;
  let validateMessage: ValidateFunction;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let member2: TestUser;
  let guest: TestUser;
  let outsider: TestUser;
  beforeAll(() => ({ t, validateMessage, owner, manager, member, member2, guest, outsider } = fixture));

  // --- archived sessions and tags --------------------------------------------------------------

  describe('archive and tag filters', () => {
    const ids = (res: Response) => (res.body.sessions as SessionView[]).map((s) => s.sessionId);
    const tagged = (...names: string[]) => ({ sessionSettings: { tags: names.map((name) => ({ name, metadata: { note: `not-${name}` } })) } });

    it('archived sessions leave the default list; archived=include and archived=only bring them back, page by page', async () => {
      const boss = await ownerOfNewOrg();
      const created: string[] = [];
      for (let i = 0; i < 7; i++) created.push((await createSession(boss, { title: `a${i}` })).sessionId);
      const archived = new Set(created.filter((_, i) => i % 2 === 0));
      for (const id of archived) {
        expectStatus(
          await http()
            .patch(path(id))
            .set(boss.auth)
            .send({ sessionSettings: { archivedAt: '2026-11-29T08:00:00Z' } }),
          200,
        );
      }
      const newestFirst = [...created].reverse();
      const walkAll = async (query: string) =>
        (await walk<SessionView>((cursor) => listSessions(boss, `limit=2${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`), 'sessions'))
          .flat()
          .map((s) => s.sessionId);

      expect(ids(await listSessions(boss))).toEqual(newestFirst.filter((id) => !archived.has(id)));
      expect(await walkAll('')).toEqual(newestFirst.filter((id) => !archived.has(id)));
      expect(await walkAll('&archived=exclude')).toEqual(newestFirst.filter((id) => !archived.has(id)));
      expect(await walkAll('&archived=only')).toEqual(newestFirst.filter((id) => archived.has(id)));
      expect(await walkAll('&archived=include')).toEqual(newestFirst);

      // Unarchived, it is back in the default list; a session is still readable by id while archived.
      const [first] = archived;
      expectStatus(await getSession(boss, first), 200);
      expectStatus(
        await http()
          .patch(path(first))
          .set(boss.auth)
          .send({ sessionSettings: { archivedAt: null } }),
        200,
      );
      expect(ids(await listSessions(boss, 'limit=100'))).toContain(first);
    });

    it('tag= lists only sessions carrying a tag of exactly that name, never by metadata or a part of a name', async () => {
      const boss = await ownerOfNewOrg();
      const bug = (await createSession(boss, tagged('bug', 'ui'))).sessionId;
      const bugOnly = (await createSession(boss, tagged('bug'))).sessionId;
      await createSession(boss, tagged('bugfix', 'Bug'));
      await createSession(boss, tagged('not-bug'));
      await createSession(boss);
      const archivedBug = (await createSession(boss, { sessionSettings: { ...tagged('bug').sessionSettings, archivedAt: '2026-11-29T08:00:00Z' } })).sessionId;

      expect(ids(await listSessions(boss, 'tag=bug'))).toEqual([bugOnly, bug]);
      expect(ids(await listSessions(boss, 'tag=ui'))).toEqual([bug]);
      expect(ids(await listSessions(boss, 'tag=bug&archived=include'))).toEqual([archivedBug, bugOnly, bug]);
      expect(ids(await listSessions(boss, `tag=${encodeURIComponent('"}]')}`))).toEqual([]);
      // Another organization's tags are never listed.
      expect(ids(await listSessions(owner, 'tag=bug&archived=include'))).not.toEqual(expect.arrayContaining([bug]));
    });

    it('a bad archive or tag filter is 400 naming it', async () => {
      expectInvalid(await listSessions(owner, 'archived=yes'), 'archived');
      expectInvalid(await listSessions(owner, 'tag='), 'tag');
      expectInvalid(await listSessions(owner, `tag=${'x'.repeat(101)}`), 'tag');
    });
  });

  // --- ordering and pagination ---------------------------------------------------------------

  describe('ordering and pagination', () => {
    it('lists sessions newest first across pages, without repeating or skipping any while new ones are created', async () => {
      const boss = await ownerOfNewOrg();
      const created: SessionView[] = [];
      for (let i = 0; i < 22; i++) created.push(await createSession(boss, { title: `s${i}` }));
      const newestFirst = created.map((s) => s.sessionId).reverse();

      // Default limit 20.
      const first = await listSessions(boss);
      expectStatus(first, 200);
      expect((first.body.sessions as SessionView[]).map((s) => s.sessionId)).toEqual(newestFirst.slice(0, 20));
      expect(first.body.pagination).toEqual({ hasMore: true, nextCursor: expect.any(String) });

      const inserted: string[] = [];
      const pages = await walk<SessionView>(
        (cursor) => listSessions(boss, `limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
        'sessions',
        async () => {
          for (let i = 0; i < 2; i++) inserted.push((await createSession(boss, { title: 'during' })).sessionId);
        },
      );
      expect(pages.map((p) => p.length)).toEqual([5, 5, 5, 5, 2]);
      expect(pages.flat().map((s) => s.sessionId)).toEqual(newestFirst);
      expect(inserted).toHaveLength(8);

      const fresh = await listSessions(boss, 'limit=100');
      expect((fresh.body.sessions as SessionView[]).map((s) => s.sessionId)).toEqual([...inserted.reverse(), ...newestFirst]);
      expect(fresh.body.pagination).toEqual({ hasMore: false, nextCursor: null });
    });

    it('deleting the session a cursor points at, while paging, neither repeats nor skips any other', async () => {
      const boss = await ownerOfNewOrg();
      const created: string[] = [];
      for (let i = 0; i < 9; i++) created.push((await createSession(boss)).sessionId);
      const newestFirst = [...created].reverse();
      let last: string | undefined;
      const deleted: string[] = [];
      const pages = await walk<SessionView>(
        async (cursor) => {
          const res = await listSessions(boss, `limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
          last = (res.body.sessions as SessionView[]).at(-1)?.sessionId;
          return res;
        },
        'sessions',
        async () => {
          expectStatus(await http().delete(path(last)).set(boss.auth), 204);
          deleted.push(last!);
        },
      );
      expect(deleted).toHaveLength(2);
      expect(pages.flat().map((s) => s.sessionId)).toEqual(newestFirst);
      const remaining = ((await listSessions(boss, 'limit=100')).body.sessions as SessionView[]).map((s) => s.sessionId);
      expect(remaining).toEqual(newestFirst.filter((id) => !deleted.includes(id)));
    });

    it('a cursor of another organization’s list shows only the caller’s own sessions', async () => {
      const a = await ownerOfNewOrg();
      const b = await ownerOfNewOrg();
      const bOlder = await createSession(b);
      for (let i = 0; i < 3; i++) await createSession(a, { title: `a${i}` });
      const bNewer = await createSession(b);
      const aCursor = (await listSessions(a, 'limit=1')).body.pagination.nextCursor as string;
      const res = await listSessions(b, `cursor=${encodeURIComponent(aCursor)}`);
      expectStatus(res, 200);
      const ids = (res.body.sessions as SessionView[]).map((s) => s.sessionId);
      expect(ids.every((id) => [bOlder.sessionId, bNewer.sessionId].includes(id))).toBe(true);
      expect(res.text).not.toMatch(/"title":"a\d"/);
    });

    it('sessions created at the same moment are each listed exactly once, ordered by createdAt then sessionId, descending', async () => {
      const boss = await ownerOfNewOrg();
      const created = await Promise.all(Array.from({ length: 15 }, () => createSession(boss)));
      const pages = await walk<SessionView>((cursor) => listSessions(boss, `limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`), 'sessions');
      const listed = pages.flat();
      expect(listed).toHaveLength(15);
      expect(new Set(listed.map((s) => s.sessionId))).toEqual(new Set(created.map((s) => s.sessionId)));
      for (let i = 1; i < listed.length; i++) {
        const [a, b] = [listed[i - 1], listed[i]];
        expect(a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.sessionId > b.sessionId)).toBe(true);
      }
    });

    it('lists messages in conversation order across pages', async () => {
      const session = await createSession(owner);
      const ids: string[] = [];
      for (let i = 0; i < 9; i++) ids.push((await addMessage(i % 2 ? manager : owner, session.sessionId, { text: `n${i}` })).messageId);
      const pages = await walk<MessageView>(
        (cursor) => getMessages(owner, session.sessionId, `limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
        'messages',
        // Messages added while paging come after the walk's position: they show up on the last page.
        async () => {
          if (ids.length < 11) ids.push((await addMessage(owner, session.sessionId, { text: `n${ids.length}` })).messageId);
        },
      );
      const listed = pages.flat();
      expect(listed.map((m) => m.id)).toEqual(ids);
      expect(pages.map((p) => p.length)).toEqual([4, 4, 3]);
      expectParentChain(listed);
    });

    it('role keeps only the messages of that role, in order, across pages; unfiltered shows them all', async () => {
      const boss = await ownerOfNewOrg();
      const session = await createSession(boss);
      const u1 = (await addMessage(boss, session.sessionId, { text: 'u1' })).messageId;
      const work = await claim(boss);
      const appended = await http()
        .post(`/api/v0/agent/sessions/${session.sessionId}/messages`)
        .set(boss.auth)
        .send({
          turnId: work.turnId,
          messages: [
            { role: 'assistant', content: [{ type: 'text', text: 'a1' }] },
            { role: 'tool', content: [{ type: 'tool_result', toolUseId: 'call-1', content: 'ok' }] },
            { role: 'system', content: [{ type: 'text', text: 'sys' }] },
            { role: 'assistant', content: [{ type: 'text', text: 'a2' }] },
          ],
        });
      expectStatus(appended, 200);
      const [a1, tool, sys, a2] = (appended.body.messages as MessageView[]).map((m) => m.id);
      const u2 = (await addMessage(boss, session.sessionId, { text: 'u2' })).messageId;

      const all = await allMessages(boss, session.sessionId);
      expect(all.map((m) => m.id)).toEqual([u1, a1, tool, sys, a2, u2]);
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'system', 'assistant', 'user']);
      all.forEach((m) => expectValid(validateMessage, m));
      expectParentChain(all);
      expect(all.filter((m) => m.role !== 'user').every((m) => !('userMessageSource' in m))).toBe(true);

      for (const [role, expected] of [
        ['user', [u1, u2]],
        ['assistant', [a1, a2]],
        ['tool', [tool]],
      ] as const) {
        const pages = await walk<MessageView>(
          (cursor) => getMessages(boss, session.sessionId, `role=${role}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
          'messages',
        );
        expect(pages.flat().map((m) => m.id)).toEqual(expected);
        expect(pages.flat().every((m) => m.role === role)).toBe(true);
      }
      expect((await readSession(boss, session.sessionId)).messageCount).toBe(6);
    });
  });

  // --- roles and isolation -------------------------------------------------------------------

  describe('roles and isolation', () => {
    let ownerSession: SessionView;
    let memberSession: SessionView;
    let member2Session: SessionView;
    let guestOwn: SessionView;

    beforeAll(async () => {
      ownerSession = await createSession(owner, { title: 'owner secret title' });
      memberSession = await createSession(member, { title: 'member' });
      member2Session = await createSession(member2, { title: 'member2' });
      await addMessage(member2, member2Session.sessionId, { text: 'by member2' });
      guestOwn = await guestSession(guest, 'guest own');
    });

    const writes = (user: TestUser, id: string) =>
      [
        ['PATCH', () => http().patch(path(id)).set(user.auth).send({ title: 'changed' })],
        ['DELETE', () => http().delete(path(id)).set(user.auth)],
        ['add-message', () => postMessage(user, id, { text: 'sneaky' })],
      ] as const;

    it('a guest cannot create sessions: 403 insufficient_role', async () => {
      expectV0Error(await http().post(path()).set(guest.auth).send({ title: 'mine' }), 403, 'insufficient_role');
    });

    it('a guest gets 403 insufficient_role on every write, even to their own session, and nothing changes', async () => {
      for (const id of [guestOwn.sessionId, ownerSession.sessionId, randomUUID()]) {
        for (const [, write] of writes(guest, id)) expectV0Error(await write(), 403, 'insufficient_role');
      }
      expect(await readSession(guest, guestOwn.sessionId)).toEqual(guestOwn);
    });

    it('a guest reads their own session and its messages, and sees only their own sessions in the list', async () => {
      expect(await readSession(guest, guestOwn.sessionId)).toEqual(guestOwn);
      expectStatus(await getMessages(guest, guestOwn.sessionId), 200);
      const listed = await listSessions(guest, 'limit=100');
      expectStatus(listed, 200);
      expect((listed.body.sessions as SessionView[]).map((s) => s.sessionId)).toEqual([guestOwn.sessionId]);
    });

    it('a guest gets 404 for other users’ sessions and their messages', async () => {
      for (const id of [ownerSession.sessionId, member2Session.sessionId]) {
        expectV0Error(await getSession(guest, id), 404, 'session_not_found');
        expectV0Error(await getMessages(guest, id), 404, 'session_not_found');
      }
    });

    it('a member reads another member’s session, its messages, and every session of the organization', async () => {
      expect((await readSession(member, member2Session.sessionId)).title).toBe('member2');
      const messages = await allMessages(member, member2Session.sessionId);
      expect(messages.map((m) => m.content)).toEqual([[{ type: 'text', text: 'by member2' }]]);
      const listed = ((await listSessions(member, 'limit=100')).body.sessions as SessionView[]).map((s) => s.sessionId);
      expect(listed).toEqual(expect.arrayContaining([ownerSession.sessionId, memberSession.sessionId, member2Session.sessionId, guestOwn.sessionId]));
    });

    it('a member gets 403 read_only_role writing another member’s or the owner’s session, and nothing changes', async () => {
      for (const target of [member2Session, ownerSession]) {
        const before = await readSession(owner, target.sessionId);
        for (const [, write] of writes(member, target.sessionId)) expectV0Error(await write(), 403, 'read_only_role');
        const keyed = await http()
          .post(path(target.sessionId, '/messages'))
          .set(member.auth)
          .set('Idempotency-Key', `ro-${target.sessionId}`)
          .send({ text: 'x' });
        expectV0Error(keyed, 403, 'read_only_role');
        expect(await readSession(owner, target.sessionId)).toEqual(before);
      }
    });

    it('a member writes their own session; a message, with no read of the session before its statement', async () => {
      const session = await createSession(member, { title: 'mine' });
      // The statement itself keeps a member to their own sessions (the 403 above comes after it finds none).
      const reads = jest.spyOn(t.app.get(SessionsRepository), 'findSession');
      try {
        expect((await addMessage(member, session.sessionId)).status).toBe('pending');
        expect(reads).not.toHaveBeenCalled();
      } finally {
        reads.mockRestore();
      }
      const patched = await http().patch(path(session.sessionId)).set(member.auth).send({ title: 'still mine' });
      expectStatus(patched, 200);
      expect(patched.body.title).toBe('still mine');
      expectStatus(await http().delete(path(session.sessionId)).set(member.auth), 204);
    });

    it('owners and managers write any session of their organization', async () => {
      const target = await createSession(member, { title: 'for the managers' });
      expectStatus(await http().patch(path(target.sessionId)).set(manager.auth).send({ title: 'renamed by manager' }), 200);
      await addMessage(manager, target.sessionId, { text: 'from manager' });
      await addMessage(owner, target.sessionId, { text: 'from owner' });
      expect(await readSession(member, target.sessionId)).toMatchObject({ title: 'renamed by manager', messageCount: 2 });
      expectStatus(await http().delete(path(target.sessionId)).set(manager.auth), 204);
      expectV0Error(await getSession(member, target.sessionId), 404, 'session_not_found');
    });

    it('another organization’s session answers 404 session_not_found on every endpoint, revealing nothing', async () => {
      const before = await readSession(owner, ownerSession.sessionId);
      const id = ownerSession.sessionId;
      const responses: Array<[string, Response]> = [
        ['GET', await getSession(outsider, id)],
        ['PATCH', await http().patch(path(id)).set(outsider.auth).send({ title: 'hijacked' })],
        ['DELETE', await http().delete(path(id)).set(outsider.auth)],
        ['GET messages', await getMessages(outsider, id)],
        ['POST messages', await postMessage(outsider, id, { text: 'hello from outside' })],
        ['POST messages keyed', await http().post(path(id, '/messages')).set(outsider.auth).set('Idempotency-Key', 'outside').send({ text: 'x' })],
      ];
      for (const [, res] of responses) {
        expectV0Error(res, 404, 'session_not_found');
        expect(res.text).not.toContain('owner secret title');
        expect(res.text).not.toContain(owner.organizationId);
      }
      expect(await readSession(owner, id)).toEqual(before);
      const listed = (await listSessions(outsider, 'limit=100')).body.sessions as SessionView[];
      expect(listed.some((s) => [ownerSession, memberSession, member2Session, guestOwn].some((o) => o.sessionId === s.sessionId))).toBe(false);
    });

    it.each(['not-a-uuid', '12345', `${randomUUID()}x`, randomUUID(), '%20'])('session id %s answers 404 session_not_found on every endpoint', async (id) => {
      const responses: Array<[string, Response]> = [
        ['GET', await getSession(owner, id)],
        ['PATCH', await http().patch(path(id)).set(owner.auth).send({ title: 't' })],
        ['DELETE', await http().delete(path(id)).set(owner.auth)],
        ['GET messages', await getMessages(owner, id)],
        ['POST messages', await postMessage(owner, id, { text: 'x' })],
        ['POST messages (member)', await postMessage(member, id, { text: 'x' })],
      ];
      for (const [, res] of responses) expectV0Error(res, 404, 'session_not_found');
    });
  });

  // --- message history feature, credentials --------------------------------------------------

  describe('message history and credentials', () => {
    let noHistory: TestUser;
    let someSessionOfOrgA: string;

    beforeAll(async () => {
      noHistory = await createUser(t, Role.Owner, await createOrganization(t, {}));
      someSessionOfOrgA = (await createSession(member)).sessionId;
    });

    it('list-messages answers 403 message_history_disabled where the feature is off, even for a session that does not exist', async () => {
      const session = await createSession(noHistory);
      expect((await addMessage(noHistory, session.sessionId, { text: 'still stored' })).status).toBe('pending');
      for (const id of [session.sessionId, randomUUID(), 'not-a-uuid', someSessionOfOrgA]) {
        const res = await getMessages(noHistory, id);
        expectV0Error(res, 403, 'message_history_disabled');
        expect(res.body.title).toBe('Forbidden');
        expect(res.body.metadata).toEqual({ code: 'message_history_disabled' });
      }
      expect((await readSession(noHistory, session.sessionId)).messageCount).toBe(1);
    });

    it.each([
      ['no credentials', {}, 'missing_credentials'],
      ['an unknown key', { Authorization: `Bearer apk_${'Q'.repeat(43)}` }, 'invalid_credentials'],
    ])('%s answers 401 in the v0 body on every endpoint', async (_, headers, code) => {
      const id = someSessionOfOrgA;
      const responses = [
        await http().post(path()).set(headers).send({}),
        await http().get(path()).set(headers),
        await http().get(path(id)).set(headers),
        await http().patch(path(id)).set(headers).send({ title: 'x' }),
        await http().delete(path(id)).set(headers),
        await http().get(path(id, '/messages')).set(headers),
        await http().post(path(id, '/messages')).set(headers).send({ text: 'x' }),
      ];
      for (const res of responses) {
        expectV0Error(res, 401, code);
        expect(res.body.title).toBe('Unauthorized');
      }
      expect((await readSession(member, id)).messageCount).toBe(0);
    });
  });
});

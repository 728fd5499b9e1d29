import { randomUUID } from 'node:crypto';
import { ValidateFunction } from 'ajv';
import { DataSource } from 'typeorm';
import { TestUser } from '../utils/factories';
import { expectInvalid, expectStatus, expectV0Error } from '../utils/v0-errors';
import { TestApp } from '../utils/test-app';
import { image, Json, MessageView, PNG, sessionsFixture, SessionView } from '../utils/fixtures/sessions';

/** The public v0 sessions API over real HTTP: concurrent writes, Idempotency-Key replays, PATCH and DELETE. */

describe('Sessions API (v0)', () => {
  const fixture = sessionsFixture();
  const {
    http,
    path,
    expectValid,
    ownerOfNewOrg,
    createSession,
    getSession,
    listSessions,
    postMessage,
    getMessages,
    addMessage,
    readSession,
    allMessages,
    walk,
    expectParentChain,
  } = fixture;
  let t: TestApp;
  let validateSession: ValidateFunction;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let outsider: TestUser;
  beforeAll(() => ({ t, validateSession, owner, manager, member, outsider } = fixture));

  // --- concurrency ---------------------------------------------------------------------------

  describe('concurrency', () => {
    it('20 concurrent messages from two users all succeed and form one total order', async () => {
      const session = await createSession(owner);
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => postMessage(i % 2 ? manager : owner, session.sessionId, { text: `c${i}` })));
      for (const res of results) {
        expectStatus(res, 200);
        expect(res.body.status).toBe('pending');
      }
      const read = await readSession(owner, session.sessionId);
      expect(read).toMatchObject({ messageCount: 20, status: 'pending' });

      const messages = await allMessages(owner, session.sessionId);
      expect(messages).toHaveLength(20);
      expect(new Set(messages.map((m) => m.id))).toEqual(new Set(results.map((r) => r.body.messageId as string)));
      expect(new Set(messages.map((m) => (m.content[0] as { text: string }).text))).toEqual(new Set(Array.from({ length: 20 }, (_, i) => `c${i}`)));
      expectParentChain(messages);
      // The paged walk sees the same order.
      const pages = await walk<MessageView>(
        (cursor) => getMessages(owner, session.sessionId, `limit=6${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
        'messages',
      );
      expect(pages.flat().map((m) => m.id)).toEqual(messages.map((m) => m.id));
    });

    // Each message's createdAt (and the session's updatedAt) is taken before the session's row lock,
    // so under contention a later message could carry an earlier time.
    async function concurrentMessages(): Promise<{ session: SessionView; times: number[] }> {
      const created = await createSession(owner);
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => postMessage(i % 2 ? manager : owner, created.sessionId, { text: `t${i}` })));
      for (const res of results) expectStatus(res, 200);
      const times = (await allMessages(owner, created.sessionId)).map((m) => m.createdAt);
      return { session: await readSession(owner, created.sessionId), times };
    }

    it('under concurrent messages, createdAt never goes backwards along the conversation', async () => {
      const { times } = await concurrentMessages();
      expect(times).toEqual([...times].sort((a, b) => a - b));
    });

    it('under concurrent messages, the session’s updatedAt is not older than its newest message', async () => {
      // The race is timing-dependent: three rounds make it show on PostgreSQL nearly every run.
      for (let round = 0; round < 3; round++) {
        const { session, times } = await concurrentMessages();
        expect({ round, updatedAt: session.updatedAt, newestMessage: Math.max(...times), regressed: session.updatedAt < Math.max(...times) }).toMatchObject({
          regressed: false,
        });
      }
    });

    it('concurrent settings changes are all kept (each merges into the latest settings)', async () => {
      const session = await createSession(owner, { sessionSettings: { model: 'base' } });
      const changes: Json[] = [
        { specModeModel: 'spec' },
        { reasoningEffort: 'high' },
        { interactionMode: 'spec' },
        { autonomyLevel: 'low' },
        { autonomyMode: 'unattended' },
        { providerLock: 'custom' },
        { apiProviderLock: 'responses' },
        { archivedAt: '2026-03-01T00:00:00.000Z' },
        { enabledToolIds: ['e'] },
        { disabledToolIds: ['d'] },
        { tags: [{ name: 'n', metadata: {} }] },
      ];
      const results = await Promise.all(
        changes.map((sessionSettings, i) =>
          http()
            .patch(path(session.sessionId))
            .set(i % 2 ? manager.auth : owner.auth)
            .send({ sessionSettings }),
        ),
      );
      for (const res of results) expectStatus(res, 200);
      expect((await readSession(owner, session.sessionId)).sessionSettings).toEqual(Object.assign({ model: 'base' }, ...changes));
    });

    it('messages racing a DELETE either land before it (then go with it) or answer 404; never a 500', async () => {
      const session = await createSession(owner);
      const requests = Array.from({ length: 10 }, (_, i) => postMessage(i % 2 ? manager : owner, session.sessionId, { text: `r${i}` }));
      requests.splice(5, 0, http().delete(path(session.sessionId)).set(owner.auth));
      const results = await Promise.all(requests);
      expectStatus(results[5], 204);
      for (const res of results.filter((_, i) => i !== 5)) {
        if (res.status === 404) expectV0Error(res, 404, 'session_not_found');
        else expectStatus(res, 200);
      }
      expectV0Error(await getSession(owner, session.sessionId), 404, 'session_not_found');
      const rows = (await t.app.get(DataSource).query('SELECT count(*)::int AS n FROM messages WHERE session_id = $1', [session.sessionId])) as Array<{
        n: number;
      }>;
      expect(rows[0].n).toBe(0);
    });

    it('concurrent messages from a member to their own session all succeed', async () => {
      const session = await createSession(member);
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => postMessage(member, session.sessionId, { text: `m${i}` })));
      for (const res of results) expectStatus(res, 200);
      expect((await readSession(member, session.sessionId)).messageCount).toBe(6);
      expectParentChain(await allMessages(member, session.sessionId));
    });
  });

  // --- idempotency ---------------------------------------------------------------------------

  describe('Idempotency-Key', () => {
    const keyed = (user: TestUser, id: string, key: string, body: Json) =>
      http().post(path(id, '/messages')).set(user.auth).set('Idempotency-Key', key).send(body);

    it('the same key and body twice: the same answer, marked replayed, and one message', async () => {
      const session = await createSession(owner);
      const key = randomUUID();
      const first = await keyed(owner, session.sessionId, key, { text: 'once' });
      expectStatus(first, 200);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const second = await keyed(owner, session.sessionId, key, { text: 'once' });
      expectStatus(second, 200);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.body).toEqual(first.body);
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(1);
      expect((await allMessages(owner, session.sessionId)).map((m) => m.id)).toEqual([first.body.messageId]);
    });

    it('the same body with its keys in another order is the same request', async () => {
      const session = await createSession(owner);
      const key = randomUUID();
      const first = await keyed(owner, session.sessionId, key, { text: 'pic', images: [image(PNG, 'image/png')] });
      const second = await keyed(owner, session.sessionId, key, { images: [{ mediaType: 'image/png', data: PNG, type: 'base64' }], text: 'pic' });
      expectStatus(second, 200);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.body).toEqual(first.body);
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(1);
    });

    it('the same key with another body, or another session, answers 422 idempotency_key_reused and does nothing', async () => {
      const session = await createSession(owner);
      const other = await createSession(owner);
      const key = randomUUID();
      expectStatus(await keyed(owner, session.sessionId, key, { text: 'original' }), 200);
      const changed = await keyed(owner, session.sessionId, key, { text: 'different' });
      expectV0Error(changed, 422, 'idempotency_key_reused');
      expect(changed.body.detail).toContain('Idempotency-Key');
      expectV0Error(await keyed(owner, other.sessionId, key, { text: 'original' }), 422, 'idempotency_key_reused');
      // Used on create-session too: another route, so another request.
      expectV0Error(await http().post(path()).set(owner.auth).set('Idempotency-Key', key).send({}), 422, 'idempotency_key_reused');
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(1);
      expect((await readSession(owner, other.sessionId)).messageCount).toBe(0);
    });

    it('keys are per user: another user with the same key and body creates their own message', async () => {
      const session = await createSession(owner);
      const key = randomUUID();
      const mine = await keyed(owner, session.sessionId, key, { text: 'same' });
      const theirs = await keyed(manager, session.sessionId, key, { text: 'same' });
      expectStatus(theirs, 200);
      expect(theirs.headers['idempotent-replayed']).toBeUndefined();
      expect(theirs.body.messageId).not.toBe(mine.body.messageId);
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(2);
      // And another organization's user with the same key on its own session.
      const outside = await createSession(outsider);
      const res = await keyed(outsider, outside.sessionId, key, { text: 'same' });
      expectStatus(res, 200);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
    });

    it('5 concurrent requests with one key create exactly one message and all get its answer', async () => {
      const session = await createSession(owner);
      const key = randomUUID();
      const results = await Promise.all(Array.from({ length: 5 }, () => keyed(owner, session.sessionId, key, { text: 'racing' })));
      for (const res of results) expectStatus(res, 200);
      expect(new Set(results.map((r) => r.body.messageId as string)).size).toBe(1);
      expect(results.filter((r) => r.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(1);
    });

    it('a failed request does not use up its key', async () => {
      const session = await createSession(owner);
      const key = randomUUID();
      expectV0Error(await keyed(owner, randomUUID(), key, { text: 'nowhere' }), 404, 'session_not_found');
      expectV0Error(await keyed(owner, session.sessionId, key, { text: '' }), 400, 'validation_failed');
      const res = await keyed(owner, session.sessionId, key, { text: 'now it works' });
      expectStatus(res, 200);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(1);
    });

    it.each([
      ['300 characters', 'k'.repeat(300)],
      ['256 characters', 'k'.repeat(256)],
      ['a space', 'my key'],
      ['empty', ''],
      ['a non-ASCII character', 'clé'],
    ])('a key with %s answers 400 naming Idempotency-Key and does nothing', async (_, key) => {
      const session = await createSession(owner);
      const res = await keyed(owner, session.sessionId, key, { text: 'x' });
      expectInvalid(res, 'Idempotency-Key');
      const create = await http().post(path()).set(owner.auth).set('Idempotency-Key', key).send({ title: 'not created' });
      expectInvalid(create, 'Idempotency-Key');
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(0);
    });

    it('a key of 255 visible ASCII characters is accepted', async () => {
      const session = await createSession(owner);
      const key = `${'!~'.repeat(127)}k`;
      expect(key).toHaveLength(255);
      expectStatus(await keyed(owner, session.sessionId, key, { text: 'x' }), 200);
      expect((await keyed(owner, session.sessionId, key, { text: 'x' })).headers['idempotent-replayed']).toBe('true');
    });

    it('create-session honours the key: 201 both times, the same session, one session created', async () => {
      const boss = await ownerOfNewOrg();
      const key = randomUUID();
      const create = () =>
        http()
          .post(path())
          .set(boss.auth)
          .set('Idempotency-Key', key)
          .send({ title: 'once', sessionSettings: { model: 'm' } });
      const first = await create();
      expectStatus(first, 201);
      const second = await create();
      expectStatus(second, 201);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect(second.body).toEqual(first.body);
      const concurrent = await Promise.all(Array.from({ length: 4 }, () => create()));
      for (const res of concurrent) {
        expectStatus(res, 201);
        expect(res.body).toEqual(first.body);
      }
      const listed = (await listSessions(boss, 'limit=100')).body.sessions as SessionView[];
      expect(listed.map((s) => s.sessionId)).toEqual([first.body.sessionId]);
      expectV0Error(await http().post(path()).set(boss.auth).set('Idempotency-Key', key).send({ title: 'twice' }), 422, 'idempotency_key_reused');
    });
  });

  // --- update and delete ---------------------------------------------------------------------

  describe('PATCH and DELETE', () => {
    it('changes the title, removes it with null, and merges settings; createdAt stays, updatedAt moves on', async () => {
      const tags = [{ name: 'a', metadata: { x: 1 } }];
      const session = await createSession(member, { title: 'Original', sessionSettings: { model: 'm1', reasoningEffort: 'low', tags } });

      const renamed = await http().patch(path(session.sessionId)).set(member.auth).send({ title: 'Renamed' });
      expectStatus(renamed, 200);
      expect(renamed.body).toEqual({ ...session, title: 'Renamed', updatedAt: expect.any(Number) });
      expect(renamed.body.updatedAt).toBeGreaterThanOrEqual(session.updatedAt);
      expectValid(validateSession, renamed.body);
      expect(await readSession(member, session.sessionId)).toEqual(renamed.body);

      const merged = await http()
        .patch(path(session.sessionId))
        .set(member.auth)
        .send({ sessionSettings: { reasoningEffort: 'high', enabledToolIds: ['t1'], archivedAt: '2026-02-01T00:00:00.000Z' } });
      expectStatus(merged, 200);
      expect(merged.body.title).toBe('Renamed');
      expect(merged.body.sessionSettings).toEqual({
        model: 'm1',
        reasoningEffort: 'high',
        tags,
        enabledToolIds: ['t1'],
        archivedAt: '2026-02-01T00:00:00.000Z',
      });
      expect(await readSession(member, session.sessionId)).toEqual(merged.body);

      const unarchived = await http()
        .patch(path(session.sessionId))
        .set(member.auth)
        .send({ sessionSettings: { archivedAt: null } });
      expectStatus(unarchived, 200);
      expect(unarchived.body.sessionSettings).toEqual({ model: 'm1', reasoningEffort: 'high', tags, enabledToolIds: ['t1'] });
      merged.body.sessionSettings = unarchived.body.sessionSettings;

      const untitled = await http().patch(path(session.sessionId)).set(member.auth).send({ title: null });
      expectStatus(untitled, 200);
      expect(untitled.body).not.toHaveProperty('title');
      expect(untitled.body.sessionSettings).toEqual(merged.body.sessionSettings);
      const read = await readSession(member, session.sessionId);
      expect(read).not.toHaveProperty('title');
      expect(read).toEqual(untitled.body);
      expect(read.createdAt).toBe(session.createdAt);
      expectValid(validateSession, read);

      const nothing = await http().patch(path(session.sessionId)).set(member.auth).send({});
      expectStatus(nothing, 200);
      expect({ ...nothing.body, updatedAt: 0 }).toEqual({ ...read, updatedAt: 0 });
    });

    it('a PATCH does not change status or messageCount', async () => {
      const session = await createSession(owner);
      await addMessage(owner, session.sessionId);
      const res = await http().patch(path(session.sessionId)).set(owner.auth).send({ title: 'x' });
      expect(res.body).toMatchObject({ status: 'pending', messageCount: 1, title: 'x' });
    });

    it('DELETE answers 204 with no body; the session and its messages are gone for good', async () => {
      const session = await createSession(owner, { title: 'doomed' });
      for (let i = 0; i < 3; i++) await addMessage(owner, session.sessionId, { text: `d${i}` });
      const res = await http().delete(path(session.sessionId)).set(owner.auth);
      expectStatus(res, 204);
      expect(res.text).toBe('');

      expectV0Error(await getSession(owner, session.sessionId), 404, 'session_not_found');
      expectV0Error(await getMessages(owner, session.sessionId), 404, 'session_not_found');
      expectV0Error(await postMessage(owner, session.sessionId, { text: 'late' }), 404, 'session_not_found');
      expectV0Error(await http().patch(path(session.sessionId)).set(owner.auth).send({ title: 'back' }), 404, 'session_not_found');
      expectV0Error(await http().delete(path(session.sessionId)).set(owner.auth), 404, 'session_not_found');
      const listed = (await listSessions(owner, 'limit=100')).body.sessions as SessionView[];
      expect(listed.some((s) => s.sessionId === session.sessionId)).toBe(false);
      const rows = (await t.app.get(DataSource).query('SELECT count(*)::int AS n FROM messages WHERE session_id = $1', [session.sessionId])) as Array<{
        n: number;
      }>;
      expect(rows[0].n).toBe(0);
    });
  });
  // --- archived sessions ---------------------------------------------------------------------

  describe('archived sessions', () => {
    const archive = (user: TestUser, id: string, archivedAt: string | null) => http().patch(path(id)).set(user.auth).send({ sessionSettings: { archivedAt } });

    it('an archived session takes no new message (409 session_archived, nothing written) until it is unarchived', async () => {
      const session = await createSession(member, { title: 'to archive' });
      await addMessage(member, session.sessionId, { text: 'before' });
      const before = await readSession(member, session.sessionId);
      expectStatus(await archive(member, session.sessionId, '2026-11-29T08:00:00.000Z'), 200);

      for (const [user, key] of [
        [member, undefined],
        [owner, 'archived-replay-1'],
      ] as const) {
        const refused = await postMessage(user, session.sessionId, { text: 'after' }).set(key ? { 'Idempotency-Key': key } : {});
        expectV0Error(refused, 409, 'session_archived');
        expect(refused.body.detail).toContain('archivedAt to null');
        expect(refused.body.metadata).toEqual({ code: 'session_archived', archivedAt: '2026-11-29T08:00:00.000Z' });
      }
      const after = await readSession(member, session.sessionId);
      expect({ messageCount: after.messageCount, status: after.status }).toEqual({ messageCount: before.messageCount, status: before.status });
      expect((await allMessages(member, session.sessionId)).map((m) => (m.content[0] as { text: string }).text)).toEqual(['before']);

      // Still 404 for anyone who may not see it: archiving says nothing to other tenants.
      expectV0Error(await postMessage(outsider, session.sessionId, { text: 'x' }), 404, 'session_not_found');

      expectStatus(await archive(member, session.sessionId, null), 200);
      const taken = await postMessage(member, session.sessionId, { text: 'after' }).set({ 'Idempotency-Key': 'archived-replay-1' });
      expectStatus(taken, 200);
      expect((await readSession(member, session.sessionId)).messageCount).toBe(before.messageCount + 1);
    });

    it('messages racing an archive are each either stored or refused, never half-written', async () => {
      const session = await createSession(owner);
      const racing = Array.from({ length: 12 }, (_, i) => postMessage(i % 2 ? manager : owner, session.sessionId, { text: `r${i}` }));
      const archived = archive(owner, session.sessionId, '2026-11-29T08:00:00.000Z');
      const results = await Promise.all(racing);
      expectStatus(await archived, 200);
      const stored = results.filter((res) => res.status === 200).length;
      for (const res of results) if (res.status !== 200) expectV0Error(res, 409, 'session_archived');
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(stored);
      expect(await allMessages(owner, session.sessionId)).toHaveLength(stored);
      expectV0Error(await postMessage(owner, session.sessionId, { text: 'late' }), 409, 'session_archived');
    });

    it('archivedAt must be a date-time: anything else is 400 and the session stays as it was', async () => {
      const session = await createSession(member);
      for (const archivedAt of ['yesterday', '', 1764403200000, true]) {
        const res = await archive(member, session.sessionId, archivedAt as unknown as string);
        expectInvalid(res, 'sessionSettings.archivedAt');
      }
      expect(await readSession(member, session.sessionId)).toEqual(session);
      await addMessage(member, session.sessionId);
    });
  });
});

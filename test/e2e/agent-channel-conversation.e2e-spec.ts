import { randomUUID } from 'node:crypto';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser } from '../utils/factories';
import { TestApp } from '../utils/test-app';
import { agentChannelFixture, expectInvalid, expectV0Error, MessageView, Work } from '../utils/fixtures/agent-channel';

/** The agent's read of the conversation of its turn (`GET /api/v0/agent/sessions/{id}/messages`). */

describe('Agent channel', () => {
  const fixture = agentChannelFixture();
  const { api } = fixture;
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

  describe('reading the conversation of a turn', () => {
    const assistantMsg = (text: string) => ({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: `thinking about ${text}`, signature: 'sig' },
        { type: 'text', text },
        { type: 'tool_use', id: `use-${text}`, name: 'Read', input: { path: `${text}.txt` } },
      ],
      modelId: 'model-x',
    });
    const toolMsg = (text: string) => ({ role: 'tool', content: [{ type: 'tool_result', toolUseId: `use-${text}`, content: `contents of ${text}` }] });
    const systemMsg = {
      role: 'system',
      content: [{ type: 'text', text: 'A hook ran.' }],
      hookEventName: 'PostToolUse',
      hookStatus: 'completed',
      hookResults: [{ exitCode: 0, stdout: 'ok\n', stderr: '' }],
    };

    /** A running turn whose conversation holds user, assistant, tool and system messages: 25 in all. */
    async function longConversation(features: { messageHistory?: boolean } = {}) {
      const running = await api.runningSession(features);
      const { owner, sessionId, turnId } = running;
      const first = await api.append(owner, sessionId, { turnId, messages: [assistantMsg('a'), toolMsg('a'), systemMsg] });
      expect(first.status).toBe(200);
      const during = await api.say(owner, sessionId, 'and while you are at it…', 'running');
      const rest = await api.append(owner, sessionId, {
        turnId,
        messages: Array.from({ length: 10 }, (_, i) => [assistantMsg(`b${i}`), toolMsg(`b${i}`)]).flat(),
      });
      expect(rest.status).toBe(200);
      const roles = ['user', 'assistant', 'tool', 'system', 'user', ...Array(10).fill(['assistant', 'tool']).flat()];
      return { ...running, during, appended: [...first.body.messages, ...rest.body.messages] as MessageView[], roles };
    }

    it('returns exactly what the user-facing list returns, page by page to the end, with the same cursors', async () => {
      const { owner, sessionId, turnId, roles } = await longConversation({ messageHistory: true });
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(25);
      for (const limit of [undefined, '1', '7', '25', '100']) {
        const paging: Record<string, string> = limit ? { limit } : {};
        const mine = await api.pages((cursor) => api.conversation(owner.auth, sessionId, { turnId, ...paging, ...(cursor ? { cursor } : {}) }));
        const theirs = await api.pages((cursor) => api.userMessages(owner.auth, sessionId, { ...paging, ...(cursor ? { cursor } : {}) }));
        expect(mine).toEqual(theirs);
        expect(mine).toHaveLength(Math.ceil(25 / Number(limit ?? 20)));
        const all = mine.flatMap((p) => p.messages);
        expect(all.map((m) => m.role)).toEqual(roles);
        expect(new Set(all.map((m) => m.id)).size).toBe(25);
      }
      // A cursor of either list continues the other.
      const userFirst = await api.userMessages(owner.auth, sessionId, { limit: '10' });
      const agentFirst = await api.conversation(owner.auth, sessionId, { turnId, limit: '10' });
      expect(agentFirst.body).toEqual(userFirst.body);
      const cursor = userFirst.body.pagination.nextCursor as string;
      const agentSecond = await api.conversation(owner.auth, sessionId, { turnId, limit: '10', cursor });
      const userSecond = await api.userMessages(owner.auth, sessionId, { limit: '10', cursor: agentFirst.body.pagination.nextCursor as string });
      expect(agentSecond.status).toBe(200);
      expect(agentSecond.body).toEqual(userSecond.body);
      expect(agentSecond.body.messages[0]).toEqual((await api.listMessages(owner, sessionId))[10]);
    });

    it('answers a first turn (all of it the turn’s own) with the organization’s messageHistory off, where the user-facing list is 403; user, assistant, tool and system messages in order', async () => {
      const { owner, sessionId, turnId, work, during, appended, roles } = await longConversation();
      expectV0Error(await api.userMessages(owner.auth, sessionId), 403, 'message_history_disabled');
      const res = await api.conversation(owner.auth, sessionId, { turnId, limit: '100' });
      expect(res.status).toBe(200);
      expect(res.body.pagination).toEqual({ hasMore: false, nextCursor: null });
      const messages = res.body.messages as MessageView[];
      expect(messages.map((m) => m.role)).toEqual(roles);
      // Exactly as the claim and the appends gave them, the user message sent during the turn in its place.
      expect(messages.slice(0, 4)).toEqual([...work.messages, ...appended.slice(0, 3)]);
      expect(messages[4]).toMatchObject({ id: during, role: 'user', content: [{ type: 'text', text: 'and while you are at it…' }], parentId: appended[2].id });
      expect(messages.slice(5)).toEqual(appended.slice(3));
      // Paged the same way: the pages put together are the whole conversation.
      const pages = await api.pages((cursor) => api.conversation(owner.auth, sessionId, { turnId, limit: '6', ...(cursor ? { cursor } : {}) }));
      expect(pages.map((p) => p.messages.length)).toEqual([6, 6, 6, 6, 1]);
      expect(pages.flatMap((p) => p.messages)).toEqual(messages);
      // A member working their own session reads it too.
      const member = await createUser(t, Role.Member, await createOrganization(t));
      const own = await api.createSession(member);
      const asked = await api.say(member, own.sessionId, 'mine', 'pending');
      const memberWork = (await api.claim(member))!;
      const read = await api.conversation(member.auth, own.sessionId, { turnId: memberWork.turnId });
      expect(read.status).toBe(200);
      expect(read.body.messages.map((m: MessageView) => m.id)).toEqual([asked]);
      expectV0Error(await api.userMessages(member.auth, own.sessionId), 403, 'message_history_disabled');
    });

    it('answers 400 in the v0 error body for a missing or non-string turnId, a bad limit or cursor, or an unknown parameter', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      const other = await api.runningSession();
      const read = (query: string) => api.conversation(owner.auth, sessionId, query);
      expectInvalid(await read(''), 'turnId');
      expectInvalid(await read('limit=5'), 'turnId');
      expectInvalid(await read(`turnId=${turnId}&turnId=${turnId}`), 'turnId');
      for (const limit of ['0', '101', 'abc', '1.5', '']) expectInvalid(await read(`turnId=${turnId}&limit=${limit}`), 'limit');
      expectInvalid(await read(`turnId=${turnId}&role=user`), 'role');
      expectInvalid(await read(`turnId=${turnId}&cursor=garbage`), 'cursor', 'invalid_cursor');
      // A cursor of another session's list is not one of this list.
      await api.append(other.owner, other.sessionId, { turnId: other.turnId, messages: [assistantMsg('x'), toolMsg('x')] });
      const foreign = await api.conversation(other.owner.auth, other.sessionId, { turnId: other.turnId, limit: '1' });
      expect(foreign.body.pagination.hasMore).toBe(true);
      expectInvalid(await read(`turnId=${turnId}&cursor=${encodeURIComponent(foreign.body.pagination.nextCursor as string)}`), 'cursor', 'invalid_cursor');
      expect((await api.getSession(owner, sessionId)).status).toBe('running');
      expect((await api.conversation(owner.auth, sessionId, { turnId })).status).toBe(200);
    });

    it('answers 404 session_not_found for an unknown or malformed session id and another organization’s session, even with a turn of one’s own', async () => {
      const mine = await api.runningSession();
      const theirs = await api.runningSession();
      for (const id of [randomUUID(), 'nope', theirs.sessionId]) {
        expectV0Error(await api.conversation(mine.owner.auth, id, { turnId: mine.turnId }), 404, 'session_not_found');
      }
      // Their session with its own running turn is not found either: the turn id is no key to another organization.
      expectV0Error(await api.conversation(mine.owner.auth, theirs.sessionId, { turnId: theirs.turnId }), 404, 'session_not_found');
      expectV0Error(await api.conversation(theirs.owner.auth, mine.sessionId, { turnId: mine.turnId }), 404, 'session_not_found');
      expectV0Error(await api.conversation(mine.owner.auth, theirs.sessionId, { turnId: randomUUID() }), 404, 'session_not_found');
      for (const { owner, sessionId, turnId } of [mine, theirs]) {
        expect((await api.conversation(owner.auth, sessionId, { turnId })).status).toBe(200);
        expect((await api.getSession(owner, sessionId)).status).toBe('running');
      }
    });

    it('a member reads only their own turns (another member’s is 404), a manager any, a guest none (403)', async () => {
      const org = await createOrganization(t);
      const [alice, bob, manager, guest] = await Promise.all([
        createUser(t, Role.Member, org),
        createUser(t, Role.Member, org),
        createUser(t, Role.Manager, org),
        createUser(t, Role.Guest, org),
      ]);
      const session = await api.createSession(alice);
      const asked = await api.say(alice, session.sessionId, 'alice needs help', 'pending');
      const work = (await api.claim(alice))!;
      expectV0Error(await api.conversation(bob.auth, work.sessionId, { turnId: work.turnId }), 404, 'session_not_found');
      const guestRead = await api.conversation(guest.auth, work.sessionId, { turnId: work.turnId });
      expectV0Error(guestRead, 403, 'insufficient_role');
      for (const reader of [alice, manager]) {
        const res = await api.conversation(reader.auth, work.sessionId, { turnId: work.turnId });
        expect(res.status).toBe(200);
        expect(res.body.messages.map((m: MessageView) => m.id)).toEqual([asked]);
      }
    });

    it('answers 409 turn_not_active, with the session’s status, to a turn that is not the running one', async () => {
      const { owner, sessionId, turnId } = await api.runningSession({ messageHistory: true });
      const notActive = async (turn: string, sessionStatus: string) => {
        const res = await api.conversation(owner.auth, sessionId, { turnId: turn });
        expectV0Error(res, 409, 'turn_not_active');
        expect(res.body.metadata.sessionStatus).toBe(sessionStatus);
      };
      for (const other of [randomUUID(), 'not-a-uuid', '', '0']) await notActive(other, 'running');
      expect((await api.endTurn(owner, sessionId, { turnId })).status).toBe(200);
      await notActive(turnId, 'idle');
      await api.say(owner, sessionId, 'again', 'pending');
      await notActive(turnId, 'pending');
      const next = (await api.claim(owner))!;
      await notActive(turnId, 'running');
      const res = await api.conversation(owner.auth, sessionId, { turnId: next.turnId });
      expect(res.status).toBe(200);
      expect(res.body.messages.map((m: MessageView) => m.content)).toEqual([[{ type: 'text', text: 'hello' }], [{ type: 'text', text: 'again' }]]);
      // A session never worked on has no turn to read.
      const idle = await api.createSession(owner);
      const never = await api.conversation(owner.auth, idle.sessionId, { turnId: randomUUID() });
      expectV0Error(never, 409, 'turn_not_active');
      expect(never.body.metadata.sessionStatus).toBe('idle');
    });

    it('answers 409, like the other agent endpoints, to a turnId too long to be one', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      for (const turn of ['x'.repeat(65), 'x'.repeat(300)]) {
        expectV0Error(await api.heartbeat(owner, sessionId, { turnId: turn }), 409, 'turn_not_active');
        expectV0Error(await api.conversation(owner.auth, sessionId, { turnId: turn }), 409, 'turn_not_active');
      }
      expect((await api.conversation(owner.auth, sessionId, { turnId })).status).toBe(200);
    });

    it('changes nothing: status, messageCount, timestamps and the work queue stay, no event is published, Idempotency-Key replays nothing', async () => {
      const emitter = t.app.get(EventEmitter2);
      const seen: Array<{ name: string | string[]; event: { organizationId?: string } }> = [];
      const record = (name: string | string[], event: { organizationId?: string }) => seen.push({ name, event });
      emitter.onAny(record);
      try {
        const { org, owner, sessionId, turnId } = await api.runningSession({ messageHistory: true });
        await api.append(owner, sessionId, { turnId, messages: [assistantMsg('a')] });
        const waiting = await api.createSession(owner);
        await api.say(owner, waiting.sessionId, 'I wait', 'pending');
        const before = await Promise.all([api.getSession(owner, sessionId), api.getSession(owner, waiting.sessionId)]);
        const list = await api.listMessages(owner, sessionId);
        seen.length = 0;
        const key = randomUUID();
        const reads = [];
        const queries: Array<Record<string, string>> = [{ turnId }, { turnId, limit: '1' }, { turnId }];
        for (const query of queries) {
          reads.push(await api.conversation(owner.auth, sessionId, query).set('Idempotency-Key', key));
        }
        reads.push(...(await Promise.all(Array.from({ length: 5 }, () => api.conversation(owner.auth, sessionId, { turnId })))));
        expect(reads.map((r) => r.status)).toEqual(Array(8).fill(200));
        expect(reads.map((r) => r.headers['idempotent-replayed'])).toEqual(Array(8).fill(undefined));
        expect(reads[1].body.messages).toHaveLength(1);
        for (const r of [reads[0], reads[2], ...reads.slice(3)]) expect(r.body.messages).toEqual(list);
        expect(seen.filter((e) => e.event?.organizationId === org.id)).toEqual([]);
        expect(await Promise.all([api.getSession(owner, sessionId), api.getSession(owner, waiting.sessionId)])).toEqual(before);
        expect(before.map((s) => [s.status, s.messageCount])).toEqual([
          ['running', 2],
          ['pending', 1],
        ]);
        expect(await api.listMessages(owner, sessionId)).toEqual(list);
        // The turn is still the agent's, and the waiting work still the next claim's.
        expect((await api.heartbeat(owner, sessionId, { turnId })).status).toBe(200);
        // A read is never a replay: with the same key, the next one shows what was written since.
        const more = await api.append(owner, sessionId, { turnId, messages: [toolMsg('a')] });
        const after = await api.conversation(owner.auth, sessionId, { turnId }).set('Idempotency-Key', key);
        expect(after.headers['idempotent-replayed']).toBeUndefined();
        expect(after.body.messages).toEqual([...list, ...more.body.messages]);
        expect((await api.claim(owner))?.sessionId).toBe(waiting.sessionId);
      } finally {
        emitter.offAny(record);
      }
    });

    it('a computer’s agent token reads the turns it took; another computer’s token gets 404', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const computer = async (name: string) => {
        const res = await t.http().post('/api/v0/computers').set(owner.auth).send({ name, provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
        expect(res.status).toBe(201);
        return { id: res.body.id as string, auth: { Authorization: `Bearer ${res.body.agentToken as string}` } };
      };
      const [a, b] = [await computer('a'), await computer('b')];
      const session = await api.createSession(owner);
      const asked = await t.http().post(`/api/v0/sessions/${session.sessionId}/messages`).set(owner.auth).send({ text: 'for computer a', computerId: a.id });
      expect(asked.status).toBe(200);
      const claimed = await t.http().post('/api/v0/agent/claims').set(a.auth).send({});
      expect(claimed.body.work).toMatchObject({ sessionId: session.sessionId });
      const work = claimed.body.work as Work;

      const res = await api.conversation(a.auth, work.sessionId, { turnId: work.turnId });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ messages: work.messages, pagination: { hasMore: false, nextCursor: null } });
      expectV0Error(await api.conversation(b.auth, work.sessionId, { turnId: work.turnId }), 404, 'session_not_found');
      expectV0Error(await api.conversation(b.auth, randomUUID(), { turnId: work.turnId }), 404, 'session_not_found');
      // The owner's own key may still read it, as it may write to it.
      expect((await api.conversation(owner.auth, work.sessionId, { turnId: work.turnId })).body).toEqual(res.body);
      expect((await api.getSession(owner, session.sessionId)).status).toBe('running');
    });
  });
});

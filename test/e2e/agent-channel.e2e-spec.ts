import { randomUUID } from 'node:crypto';
import { EventEmitter2 } from '@nestjs/event-emitter';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { WorkClaims } from '../../src/modules/sessions/work-claims.service';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { serverUrl } from '../utils/test-database';
import { openClaim as openRawClaim } from '../utils/raw-claims';
import { startTestApp, TestApp } from '../utils/test-app';

/**
 * The agent channel over real HTTP: agents claim waiting work, append their messages, report
 * usage, keep their lease alive and end their turn; the session status machine follows.
 * Every test works in an organization of its own, so the work queues of tests never mix.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A 1x1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface MessageView {
  id: string;
  role: string;
  content: Array<Record<string, unknown>>;
  createdAt: number;
  updatedAt: number;
  parentId?: string;
  [field: string]: unknown;
}

interface SessionView {
  sessionId: string;
  status: 'idle' | 'pending' | 'running';
  messageCount: number;
  createdAt: number;
  updatedAt: number;
  completedAt?: number;
  sessionSettings?: Record<string, unknown>;
}

/** A credential as request headers: a user's API key, or a computer's agent token. */
type Auth = { Authorization: string };

interface Work {
  turnId: string;
  sessionId: string;
  leaseExpiresAt: number;
  session: SessionView;
  messages: MessageView[];
  messagesCursor: string | null;
}

function expectV0Error(res: Response, status: number, code: string) {
  expect({ status: res.status, body: res.body }).toMatchObject({
    status,
    body: { status, title: expect.any(String), detail: expect.any(String), metadata: { code } },
  });
}

/** A 400 whose `detail` and `metadata.errors` name `field`. */
function expectInvalid(res: Response, field: string, code = 'validation_failed') {
  expectV0Error(res, 400, code);
  expect(res.body.detail).toContain(field);
  expect(res.body.metadata.errors.map((e: { field: string }) => e.field)).toContain(field);
}

/** Shared by both apps of this file. */
function channel(getApp: () => TestApp) {
  const http = () => getApp().http();
  const post = (user: TestUser, path: string, body: object, key?: string) => {
    const req = http().post(path).set(user.auth);
    if (key) void req.set('Idempotency-Key', key);
    return req.send(body);
  };
  const api = {
    async createSession(user: TestUser, body: object = {}): Promise<SessionView> {
      const res = await post(user, '/api/v0/sessions', body);
      expect(res.status).toBe(201);
      return res.body as SessionView;
    },
    addMessage: (user: TestUser, sessionId: string, text: string, key?: string) =>
      post(user, `/api/v0/sessions/${sessionId}/messages`, { text }, key),
    /** Adds a user message and returns its id, checking the reported status. */
    async say(user: TestUser, sessionId: string, text: string, status?: SessionView['status']): Promise<string> {
      const res = await api.addMessage(user, sessionId, text);
      expect(res.status).toBe(200);
      if (status) expect(res.body.status).toBe(status);
      return res.body.messageId as string;
    },
    async getSession(user: TestUser, sessionId: string): Promise<SessionView> {
      const res = await http().get(`/api/v0/sessions/${sessionId}`).set(user.auth);
      expect(res.status).toBe(200);
      return res.body as SessionView;
    },
    async listMessages(user: TestUser, sessionId: string): Promise<MessageView[]> {
      const res = await http().get(`/api/v0/sessions/${sessionId}/messages?limit=100`).set(user.auth);
      expect(res.status).toBe(200);
      return res.body.messages as MessageView[];
    },
    claimRaw: (user: TestUser, body: object = {}, key?: string) => post(user, '/api/v0/agent/claims', body, key),
    async claim(user: TestUser, body: object = {}): Promise<Work | null> {
      const res = await api.claimRaw(user, body);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['work']);
      return res.body.work as Work | null;
    },
    append: (user: TestUser, sessionId: string, body: object, key?: string) => post(user, `/api/v0/agent/sessions/${sessionId}/messages`, body, key),
    usage: (user: TestUser, sessionId: string, body: object, key?: string) => post(user, `/api/v0/agent/sessions/${sessionId}/usage`, body, key),
    heartbeat: (user: TestUser, sessionId: string, body: object, key?: string) =>
      post(user, `/api/v0/agent/sessions/${sessionId}/heartbeat`, body, key),
    endTurn: (user: TestUser, sessionId: string, body: object, key?: string) => post(user, `/api/v0/agent/sessions/${sessionId}/end-turn`, body, key),
    /** The agent's read of the conversation of its turn; `query` as given (a string is sent as is, so repeats and odd values can be tried). */
    conversation: (auth: Auth, sessionId: string, query: Record<string, string> | string = {}) =>
      http().get(`/api/v0/agent/sessions/${sessionId}/messages?${typeof query === 'string' ? query : new URLSearchParams(query).toString()}`).set(auth),
    /** The user-facing messages list, as the agent's read above. */
    userMessages: (auth: Auth, sessionId: string, query: Record<string, string> = {}) =>
      http().get(`/api/v0/sessions/${sessionId}/messages?${new URLSearchParams(query).toString()}`).set(auth),
    /** Every page of a paged list, following `nextCursor` to the end; each page must be a 200. */
    async pages(read: (cursor?: string) => Promise<Response>): Promise<Array<{ messages: MessageView[]; pagination: { hasMore: boolean; nextCursor: string | null } }>> {
      const pages = [];
      let cursor: string | undefined;
      for (let i = 0; i < 200; i++) {
        const res = await read(cursor);
        expect({ status: res.status, body: res.body as unknown }).toMatchObject({ status: 200 });
        expect(Object.keys(res.body).sort()).toEqual(['messages', 'pagination']);
        pages.push(res.body);
        if (!res.body.pagination.hasMore) return pages;
        cursor = res.body.pagination.nextCursor as string;
      }
      throw new Error('more than 200 pages');
    },
    /** A fresh organization with an owner holding one pending session. */
    async pendingSession(features: { messageHistory?: boolean } = {}) {
      const org = await createOrganization(getApp(), features);
      const owner = await createUser(getApp(), Role.Owner, org);
      const session = await api.createSession(owner);
      const messageId = await api.say(owner, session.sessionId, 'hello', 'pending');
      return { org, owner, sessionId: session.sessionId, messageId };
    },
    /** As `pendingSession`, then claimed by the owner. */
    async runningSession(features: { messageHistory?: boolean } = {}) {
      const pending = await api.pendingSession(features);
      const work = await api.claim(pending.owner);
      expect(work?.sessionId).toBe(pending.sessionId);
      return { ...pending, work: work!, turnId: work!.turnId };
    },
  };
  return api;
}

describe('Agent channel', () => {
  let t: TestApp;
  const api = channel(() => t);

  beforeAll(async () => {
    t = await startTestApp();
  });

  afterAll(() => t.close());

  describe('the session status cycle', () => {
    it('goes idle → pending → running → idle (with completedAt), and to pending when the user writes during a turn', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const created = await api.createSession(owner);
      expect(created).toMatchObject({ status: 'idle', messageCount: 0 });
      expect(created.completedAt).toBeUndefined();
      const id = created.sessionId;

      const m1 = await api.say(owner, id, 'first', 'pending');
      expect(await api.getSession(owner, id)).toMatchObject({ status: 'pending', messageCount: 1 });

      const before = Date.now();
      const work1 = (await api.claim(owner))!;
      expect(work1).toMatchObject({ sessionId: id, turnId: expect.stringMatching(UUID), session: { sessionId: id, status: 'running' } });
      expect(Object.keys(work1).sort()).toEqual(['leaseExpiresAt', 'messages', 'messagesCursor', 'session', 'sessionId', 'turnId']);
      expect(work1.messagesCursor).toBeNull();
      expect(work1.leaseExpiresAt).toBeGreaterThan(before);
      expect(work1.messages.map((m) => [m.id, m.role, m.content])).toEqual([[m1, 'user', [{ type: 'text', text: 'first' }]]]);
      expect((await api.getSession(owner, id)).status).toBe('running');
      expect(await api.claim(owner)).toBeNull();

      const ended = await api.endTurn(owner, id, { turnId: work1.turnId, assistantActiveTimeMs: 1200 });
      expect(ended.status).toBe(200);
      const idle = ended.body.session as SessionView;
      expect(idle).toMatchObject({ sessionId: id, status: 'idle', messageCount: 1, sessionSettings: { assistantActiveTimeMs: 1200 } });
      expect(idle.completedAt).toBeGreaterThanOrEqual(before);
      expect(idle.completedAt).toBeLessThanOrEqual(Date.now());
      expect(await api.getSession(owner, id)).toMatchObject({ status: 'idle', completedAt: idle.completedAt });
      expect(await api.claim(owner)).toBeNull();

      // The next user message starts the next turn, which answers only that message.
      const m2 = await api.say(owner, id, 'second', 'pending');
      const work2 = (await api.claim(owner))!;
      expect(work2.turnId).not.toBe(work1.turnId);
      expect(work2.messages.map((m) => m.id)).toEqual([m2]);

      // A message during the turn keeps the session running; ending the turn makes it pending again.
      const m3 = await api.say(owner, id, 'third, while you work', 'running');
      const m4 = await api.say(owner, id, 'and a fourth', 'running');
      expect((await api.getSession(owner, id)).status).toBe('running');
      const again = await api.endTurn(owner, id, { turnId: work2.turnId, assistantActiveTimeMs: 300 });
      expect(again.status).toBe(200);
      expect(again.body.session).toMatchObject({ status: 'pending', completedAt: idle.completedAt, sessionSettings: { assistantActiveTimeMs: 1500 } });

      const work3 = (await api.claim(owner))!;
      expect(work3.sessionId).toBe(id);
      expect(work3.messages.map((m) => m.id)).toEqual([m3, m4]);
      const last = await api.endTurn(owner, id, { turnId: work3.turnId });
      expect(last.body.session).toMatchObject({ status: 'idle', messageCount: 4, sessionSettings: { assistantActiveTimeMs: 1500 } });
      expect(last.body.session.completedAt).toBeGreaterThanOrEqual(idle.completedAt!);
    });

    it('hands out the session that has waited longest first', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const [a, b, c] = await Promise.all([1, 2, 3].map(() => api.createSession(owner)));
      for (const s of [b, c, a]) await api.say(owner, s.sessionId, 'go');
      // More messages to an already pending session do not move it back in the queue.
      await api.say(owner, b.sessionId, 'still waiting', 'pending');
      const order = [];
      for (let i = 0; i < 3; i++) order.push((await api.claim(owner))!.sessionId);
      expect(order).toEqual([b.sessionId, c.sessionId, a.sessionId]);
    });

    it('a user message racing the end of a turn is never lost', async () => {
      const { owner, sessionId } = await api.pendingSession();
      for (let round = 0; round < 5; round++) {
        const work = (await api.claim(owner))!;
        expect(work.sessionId).toBe(sessionId);
        const [added, ended] = await Promise.all([
          api.addMessage(owner, sessionId, `racing ${round}`),
          api.endTurn(owner, sessionId, { turnId: work.turnId }),
        ]);
        expect([added.status, ended.status]).toEqual([200, 200]);
        // Whichever came first, the message was never handed to an agent: the session waits for one.
        expect((await api.getSession(owner, sessionId)).status).toBe('pending');
        const next = (await api.claim(owner))!;
        expect(next.messages.map((m) => m.id)).toEqual([added.body.messageId]);
        expect((await api.endTurn(owner, sessionId, { turnId: next.turnId })).body.session.status).toBe('idle');
        await api.say(owner, sessionId, `next round ${round}`, 'pending');
      }
    });
  });

  describe('claims', () => {
    it(`two agents asking at once never get the same work (${serverUrl() ? 'PostgreSQL, SKIP LOCKED' : 'PGlite, serialized'})`, async () => {
      const org = await createOrganization(t);
      const [owner, manager] = await Promise.all([createUser(t, Role.Owner, org), createUser(t, Role.Manager, org)]);
      const N = 6;
      for (let round = 0; round < 3; round++) {
        const sessions = await Promise.all(Array.from({ length: N }, () => api.createSession(owner)));
        await Promise.all(sessions.map((s) => api.say(owner, s.sessionId, `work ${round}`)));
        const results = await Promise.all(Array.from({ length: 2 * N }, (_, i) => api.claimRaw(i % 2 === 0 ? owner : manager)));
        expect(results.map((r) => r.status)).toEqual(Array(2 * N).fill(200));
        const claimed = results.map((r) => r.body.work as Work | null).filter((w): w is Work => w !== null);
        expect(claimed.map((w) => w.sessionId).sort()).toEqual(sessions.map((s) => s.sessionId).sort());
        expect(new Set(claimed.map((w) => w.turnId)).size).toBe(N);
        expect(results.filter((r) => r.body.work === null)).toHaveLength(N);
        for (const w of claimed) expect((await api.endTurn(owner, w.sessionId, { turnId: w.turnId })).status).toBe(200);
      }
    });

    it('a claim with waitMs returns the work as soon as a user message arrives', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const session = await api.createSession(owner);
      const started = Date.now();
      const waiting = api.claimRaw(owner, { waitMs: 5000 }).then((res) => ({ res, at: Date.now() }));
      await sleep(250);
      const addedAt = Date.now();
      const messageId = await api.say(owner, session.sessionId, 'wake up', 'pending');
      const { res, at } = await waiting;
      expect(res.status).toBe(200);
      expect(res.body.work).toMatchObject({ sessionId: session.sessionId, messages: [{ id: messageId }] });
      expect(at - addedAt).toBeLessThan(3000);
      // Woken by the message itself, not found by a periodic re-check of the database.
      expect(at - started).toBeLessThan(900);
    });

    it('a waiting claim is woken when a turn ends with user messages left to answer', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      const during = await api.say(owner, sessionId, 'one more thing', 'running');
      const started = Date.now();
      const waiting = api.claimRaw(owner, { waitMs: 5000 }).then((res) => ({ res, at: Date.now() }));
      await sleep(250);
      expect((await api.endTurn(owner, sessionId, { turnId })).body.session.status).toBe('pending');
      const { res, at } = await waiting;
      expect(res.body.work).toMatchObject({ sessionId, messages: [{ id: during }] });
      expect(at - started).toBeLessThan(900);
    });

    it('a claim with waitMs and no work answers {work: null} after about waitMs', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const started = Date.now();
      const res = await api.claimRaw(owner, { waitMs: 300 });
      const took = Date.now() - started;
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ work: null });
      expect(took).toBeGreaterThanOrEqual(290);
      expect(took).toBeLessThan(1500);
    });

    it('a waiting claim is not given another organization’s work', async () => {
      const mine = await createUser(t, Role.Owner, await createOrganization(t));
      const theirs = await api.pendingSession();
      const started = Date.now();
      const waiting = api.claimRaw(mine, { waitMs: 600 });
      await sleep(100);
      await api.say(theirs.owner, (await api.createSession(theirs.owner)).sessionId, 'not for you');
      const res = await waiting;
      expect(res.body).toEqual({ work: null });
      expect(Date.now() - started).toBeGreaterThanOrEqual(590);
      expect((await api.getSession(theirs.owner, theirs.sessionId)).status).toBe('pending');
    });

    it('rejects a computerId (none exist) with 404 and a bad body with 400', async () => {
      const owner = await createUser(t, Role.Owner, await createOrganization(t));
      for (const computerId of [randomUUID(), 'not-a-uuid']) {
        const res = await api.claimRaw(owner, { computerId });
        expectV0Error(res, 404, 'computer_not_found');
      }
      expectInvalid(await api.claimRaw(owner, { waitMs: 30_001 }), 'waitMs');
      expectInvalid(await api.claimRaw(owner, { waitMs: -1 }), 'waitMs');
      expectInvalid(await api.claimRaw(owner, { waitMs: 1.5 }), 'waitMs');
      expectInvalid(await api.claimRaw(owner, { wait: 10 }), 'wait');
    });
  });

  describe('abandoned claims', () => {
    // The control, a waiting claim whose agent stays gets the work the moment it arrives, is
    // 'a claim with waitMs returns the work as soon as a user message arrives' above.

    /** A claim over a raw connection that the test cuts as a killed agent would; `outcome` says whether it was answered first. */
    function openClaim(user: TestUser, body: object) {
      const claim = openRawClaim(t, user.auth, body);
      return { cut: claim.cut, outcome: claim.answer.then((answer) => (answer === 'cut' ? 'cut' : `answered ${answer.status}`)) };
    }

    /** Records what the service answered each claim, the ones no client is left to read included. */
    function watchClaims() {
      const spy = jest.spyOn(t.app.get(WorkClaims), 'claim');
      return {
        count: () => spy.mock.calls.length,
        answers: () => Promise.all(spy.mock.results.map((r) => r.value as Promise<{ body: { work: Work | null } }>)),
        restore: () => spy.mockRestore(),
      };
    }

    it('a claim whose agent went away while waiting takes no work: the message stays pending for the next live agent', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const { sessionId } = await api.createSession(owner);
      const claims = watchClaims();
      try {
        const dead = openClaim(owner, { waitMs: 20_000 });
        await sleep(200);
        expect(claims.count()).toBe(1); // the server is in the long poll
        dead.cut();
        expect(await dead.outcome).toBe('cut');
        await sleep(100);

        const messageId = await api.say(owner, sessionId, 'anyone there?', 'pending');
        await sleep(1500);
        // Without the check, the long poll woken by the message would have taken it: running under a turn no one does.
        expect(await api.getSession(owner, sessionId)).toMatchObject({ status: 'pending', messageCount: 1 });
        const [abandoned] = await claims.answers();
        expect(abandoned.body).toEqual({ work: null });

        const work = (await api.claim(owner))!;
        expect(work).toMatchObject({ sessionId, session: { status: 'running' }, messages: [{ id: messageId, role: 'user', content: [{ type: 'text', text: 'anyone there?' }] }] });
        expect((await api.endTurn(owner, sessionId, { turnId: work.turnId })).body.session.status).toBe('idle');
      } finally {
        claims.restore();
      }
    });

    it('a live agent waiting beside one that went away gets the work at once', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const { sessionId } = await api.createSession(owner);
      const claims = watchClaims();
      try {
        const dead = openClaim(owner, { waitMs: 20_000 });
        const live = api.claimRaw(owner, { waitMs: 5000 }).then((res) => ({ res, at: Date.now() }));
        await sleep(200);
        expect(claims.count()).toBe(2);
        dead.cut();
        expect(await dead.outcome).toBe('cut');
        await sleep(100);
        const addedAt = Date.now();
        const messageId = await api.say(owner, sessionId, 'who takes this?', 'pending');
        const { res, at } = await live;
        expect(res.status).toBe(200);
        expect(res.body.work).toMatchObject({ sessionId, messages: [{ id: messageId }] });
        expect(at - addedAt).toBeLessThan(900);
        const answers = await claims.answers();
        expect(answers.map((a) => a.body.work?.turnId ?? null).sort()).toEqual([null, res.body.work.turnId].sort());
        expect((await api.getSession(owner, sessionId)).status).toBe('running');
        expect((await api.endTurn(owner, sessionId, { turnId: res.body.work.turnId })).body.session.status).toBe('idle');
      } finally {
        claims.restore();
      }
    });

    it('an agent that went away before any work arrived ends its long poll within about a second, not at waitMs', async () => {
      const owner = await createUser(t, Role.Owner, await createOrganization(t));
      const claims = watchClaims();
      try {
        const dead = openClaim(owner, { waitMs: 20_000 });
        await sleep(200);
        expect(claims.count()).toBe(1);
        const cutAt = Date.now();
        dead.cut();
        const [answer] = await claims.answers();
        expect(answer.body).toEqual({ work: null });
        expect(Date.now() - cutAt).toBeLessThan(2500);
      } finally {
        claims.restore();
      }
    });
  });

  describe('appending agent messages', () => {
    const assistant = {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'The user wants the file.', signature: 'sig-1', signatureProvider: 'unknown', durationMs: 12 },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'text', text: 'Let me read it.' },
        { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.txt', nested: { deep: [1, 2] } } },
      ],
      modelId: 'model-x',
      reasoningEffort: 'high',
      isUserVisible: true,
    };
    const tool = {
      role: 'tool',
      content: [
        { type: 'tool_result', toolUseId: 'toolu_1', content: 'the file text' },
        {
          type: 'tool_result',
          toolUseId: 'toolu_2',
          isError: false,
          content: [
            { type: 'text', text: 'a screenshot' },
            { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: PNG } },
            { type: 'document', source: { type: 'text', mediaType: 'text/plain', data: 'notes', name: 'notes.md', mime: 'text/markdown' } },
          ],
        },
      ],
    };
    const system = {
      role: 'system',
      content: [{ type: 'text', text: 'A hook ran.' }],
      hookEventName: 'PostToolUse',
      hookMatcher: 'Read',
      hookCommands: [{ command: 'echo hi', timeout: 30 }],
      hookStatus: 'completed',
      hookResults: [{ exitCode: 0, stdout: 'hi\n', stderr: '' }, { exitCode: 1, stdout: '', stderr: 'oops', suppressOutput: true }],
      hookToolCallId: 'toolu_1',
      hookStartTime: 1000,
      hookEndTime: 1200,
    };

    it('stores assistant, tool and system messages in order, chained by parentId, exactly as given', async () => {
      const { owner, sessionId, messageId, turnId } = await api.runningSession({ messageHistory: true });
      const before = Date.now();
      const res = await api.append(owner, sessionId, { turnId, messages: [assistant, tool, system] });
      expect(res.status).toBe(200);
      const added = res.body.messages as MessageView[];
      expect(added).toHaveLength(3);
      for (const m of added) {
        expect(m.id).toMatch(UUID);
        expect(m.createdAt).toBeGreaterThanOrEqual(before);
        expect(m.updatedAt).toBe(m.createdAt);
      }
      expect(new Set(added.map((m) => m.id)).size).toBe(3);
      const strip = ({ id: _id, createdAt: _c, updatedAt: _u, parentId: _p, ...rest }: MessageView) => rest;
      expect(added.map(strip)).toEqual([assistant, tool, system]);
      expect(added.map((m) => m.parentId)).toEqual([messageId, added[0].id, added[1].id]);
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(4);

      // Without parentId a message follows the previous one; a given parentId is honoured.
      const more = await api.append(owner, sessionId, {
        turnId,
        messages: [
          { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
          { role: 'assistant', content: [{ type: 'text', text: 'An aside on the first.' }], parentId: added[0].id },
          { role: 'assistant', content: [] },
        ],
      });
      expect(more.status).toBe(200);
      const [done, aside, empty] = more.body.messages as MessageView[];
      expect(done.parentId).toBe(added[2].id);
      expect(aside.parentId).toBe(added[0].id);
      expect(empty.parentId).toBe(aside.id);
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(7);

      const stored = await api.listMessages(owner, sessionId);
      expect(stored.map((m) => m.id)).toEqual([messageId, ...added.map((m) => m.id), done.id, aside.id, empty.id]);
      expect(stored.slice(1)).toEqual([...added, ...(more.body.messages as MessageView[])]);
      expect(stored[0]).toMatchObject({ role: 'user', content: [{ type: 'text', text: 'hello' }] });
      expect(stored[0].parentId).toBeUndefined();
    });

    it('the first agent message follows the newest message, a user message sent during the turn included', async () => {
      const { owner, sessionId, turnId } = await api.runningSession({ messageHistory: true });
      const during = await api.say(owner, sessionId, 'one more thing', 'running');
      const res = await api.append(owner, sessionId, { turnId, messages: [{ role: 'assistant', content: [{ type: 'text', text: 'ok' }] }] });
      expect(res.body.messages[0].parentId).toBe(during);
    });

    it('concurrent appends of one turn keep the count and the parent chain exact', async () => {
      const { owner, sessionId, messageId, turnId } = await api.runningSession({ messageHistory: true });
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          api.append(owner, sessionId, {
            turnId,
            messages: [
              { role: 'assistant', content: [{ type: 'text', text: `a${i}` }] },
              { role: 'tool', content: [{ type: 'tool_result', toolUseId: `t${i}`, content: `r${i}` }] },
            ],
          }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(21);
      const stored = await api.listMessages(owner, sessionId);
      expect(stored).toHaveLength(21);
      // One linear chain, in stored order, and each request's two messages next to each other.
      expect(stored.map((m) => m.parentId)).toEqual([undefined, messageId, ...stored.slice(1, -1).map((m) => m.id)]);
      for (const r of results) {
        const [a, b] = r.body.messages as MessageView[];
        expect(stored.findIndex((m) => m.id === b.id)).toBe(stored.findIndex((m) => m.id === a.id) + 1);
      }
    });

    it('a NUL character or a lone surrogate in a message answers 200 or 400, never 500', async () => {
      const { owner, sessionId, turnId } = await api.runningSession({ messageHistory: true });
      const cases: Array<[string, Record<string, unknown>]> = [
        ['NUL in a text block', { role: 'assistant', content: [{ type: 'text', text: 'a\u0000b' }] }],
        ['NUL in a tool result (binary file output)', { role: 'tool', content: [{ type: 'tool_result', toolUseId: 'u', content: 'PK\u0003\u0004\u0000\u0000' }] }],
        ['NUL in tool_use input', { role: 'assistant', content: [{ type: 'tool_use', id: 'u', name: 'Write', input: { data: '\u0000' } }] }],
        ['NUL in a hook result', { role: 'system', content: [], hookResults: [{ exitCode: 0, stdout: 'x\u0000', stderr: '' }] }],
        ['a lone surrogate in a text block', { role: 'assistant', content: [{ type: 'text', text: 'cut emoji \ud83d' }] }],
      ];
      const problems: string[] = [];
      for (const [what, message] of cases) {
        const res = await api.append(owner, sessionId, { turnId, messages: [message] });
        if (res.status !== 200 && res.status !== 400) problems.push(`${what}: ${res.status} ${res.body?.metadata?.code}`);
      }
      const usage = await api.usage(owner, sessionId, { turnId, model: 'model\u0000x', inputTokens: 1 });
      if (usage.status !== 200 && usage.status !== 400) problems.push(`NUL in a usage model: ${usage.status} ${usage.body?.metadata?.code}`);
      expect(problems).toEqual([]);
    });

    it('rejects a parentId that is not a message of the session, appending nothing', async () => {
      const { owner, sessionId, turnId } = await api.runningSession({ messageHistory: true });
      const other = await api.runningSession();
      const text = { role: 'assistant', content: [{ type: 'text', text: 'x' }] };
      for (const parentId of [randomUUID(), 'not-a-uuid', other.messageId]) {
        const res = await api.append(owner, sessionId, { turnId, messages: [text, { ...text, parentId }] });
        expectInvalid(res, 'messages[1].parentId', 'parent_message_not_found');
      }
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(1);
      expect(await api.listMessages(owner, sessionId)).toHaveLength(1);
    });

    const invalid: Array<[string, Record<string, unknown>, string]> = [
      ['role user', { role: 'user', content: [] }, 'messages[0].role'],
      ['an unknown role', { role: 'robot', content: [] }, 'messages[0].role'],
      ['no content', { role: 'assistant' }, 'messages[0].content'],
      ['server-assigned id', { role: 'assistant', content: [], id: randomUUID() }, 'messages[0].id'],
      ['userMessageSource', { role: 'assistant', content: [], userMessageSource: 'web' }, 'messages[0].userMessageSource'],
      ['an unknown message field', { role: 'assistant', content: [], foo: 1 }, 'messages[0].foo'],
      ['a bad hookStatus', { role: 'system', content: [], hookStatus: 'done' }, 'messages[0].hookStatus'],
      ['a hook command without command', { role: 'system', content: [], hookCommands: [{ timeout: 3 }] }, 'messages[0].hookCommands[0].command'],
      ['an unknown hook command field', { role: 'system', content: [], hookCommands: [{ command: 'x', foo: 1 }] }, 'messages[0].hookCommands[0].foo'],
      ['a hook result without stderr', { role: 'system', content: [], hookResults: [{ exitCode: 0, stdout: '' }] }, 'messages[0].hookResults[0].stderr'],
      ['an unknown block type', { role: 'assistant', content: [{ type: 'text', text: 'a' }, { type: 'video' }] }, 'messages[0].content[1].type'],
      ...(
        [
          ['text', { type: 'text', text: 'a' }],
          ['image', { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: PNG } }],
          ['thinking', { type: 'thinking', thinking: 't', signature: 's' }],
          ['redacted_thinking', { type: 'redacted_thinking', data: 'd' }],
          ['tool_use', { type: 'tool_use', id: 'u', name: 'n', input: {} }],
          ['tool_result', { type: 'tool_result', toolUseId: 'u' }],
          ['document', { type: 'document', source: { type: 'text', mediaType: 'text/plain', data: 'x' } }],
        ] as Array<[string, Record<string, unknown>]>
      ).map(([type, block]): [string, Record<string, unknown>, string] => [
        `an unknown field in a ${type} block`,
        { role: 'assistant', content: [{ type: 'text', text: 'first' }, { ...block, foo: 1 }] },
        'messages[0].content[1].foo',
      ]),
      [
        'an unknown field in an image source',
        { role: 'assistant', content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/png', data: PNG, foo: 1 } }] },
        'messages[0].content[0].source.foo',
      ],
      [
        'an unknown field in a block inside a tool result',
        { role: 'tool', content: [{ type: 'tool_result', toolUseId: 'u', content: [{ type: 'text', text: 'a', foo: 1 }] }] },
        'messages[0].content[0].content[0].foo',
      ],
      ['a thinking block without signature', { role: 'assistant', content: [{ type: 'thinking', thinking: 't' }] }, 'messages[0].content[0].signature'],
      ['a tool_use block without input', { role: 'assistant', content: [{ type: 'tool_use', id: 'u', name: 'n' }] }, 'messages[0].content[0].input'],
      [
        'a negative thinking durationMs',
        { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: 's', durationMs: -1 }] },
        'messages[0].content[0].durationMs',
      ],
      [
        'an image that is not base64',
        { role: 'assistant', content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/png', data: 'not base64!' } }] },
        'messages[0].content[0].source.data',
      ],
      [
        'an image whose bytes are not its media type',
        { role: 'assistant', content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/jpeg', data: PNG } }] },
        'messages[0].content[0].source.data',
      ],
      [
        'an unpadded base64 image',
        { role: 'assistant', content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/png', data: PNG.replace(/=+$/, '') } }] },
        'messages[0].content[0].source.data',
      ],
      [
        'a bad image inside a tool result',
        {
          role: 'tool',
          content: [
            { type: 'tool_result', toolUseId: 'u', content: [{ type: 'text', text: 'a' }, { type: 'image', source: { type: 'base64', mediaType: 'image/gif', data: PNG } }] },
          ],
        },
        'messages[0].content[0].content[1].source.data',
      ],
      [
        'an unsupported image media type',
        { role: 'assistant', content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/bmp', data: PNG } }] },
        'messages[0].content[0].source.mediaType',
      ],
    ];

    it('rejects invalid messages with 400 naming the path, appending nothing', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      const problems: string[] = [];
      for (const [what, message, field] of invalid) {
        const res = await api.append(owner, sessionId, { turnId, messages: [message] });
        const fields = (res.body?.metadata?.errors ?? []).map((e: { field: string }) => e.field);
        if (res.status !== 400 || !fields.includes(field) || !String(res.body.detail).includes(field)) {
          problems.push(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
        }
      }
      expect(problems).toEqual([]);
      expectInvalid(await api.append(owner, sessionId, { turnId, messages: [] }), 'messages');
      expectInvalid(await api.append(owner, sessionId, { messages: [{ role: 'assistant', content: [] }] }), 'turnId');
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(1);
    });
  });

  describe('usage reports', () => {
    async function dailyRows(organizationId: string) {
      const rows = (await t.app.get(DataSource).query(
        `SELECT day::text AS day, user_id, model, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, thinking_tokens
         FROM token_usage_daily WHERE organization_id = $1 ORDER BY model`,
        [organizationId],
      )) as Array<Record<string, string | number>>;
      return rows.map((r) => ({
        day: r.day,
        userId: r.user_id,
        model: r.model,
        inputTokens: Number(r.input_tokens),
        outputTokens: Number(r.output_tokens),
        cacheCreationTokens: Number(r.cache_creation_tokens),
        cacheReadTokens: Number(r.cache_read_tokens),
        thinkingTokens: Number(r.thinking_tokens),
      }));
    }

    it('accumulate across reports and models in the session and in the daily totals per model of the session’s owner', async () => {
      const org = await createOrganization(t);
      const member = await createUser(t, Role.Member, org);
      const agent = await createUser(t, Role.Manager, org);
      const sessions = [await api.createSession(member), await api.createSession(member)];
      for (const s of sessions) await api.say(member, s.sessionId, 'count my tokens');
      const days = new Set([new Date().toISOString().slice(0, 10)]);
      const [w1, w2] = [(await api.claim(agent))!, (await api.claim(agent))!];
      expect([w1.sessionId, w2.sessionId]).toEqual(sessions.map((s) => s.sessionId));

      const report = async (w: Work, body: object) => {
        const res = await api.usage(agent, w.sessionId, { turnId: w.turnId, ...body });
        expect(res.status).toBe(200);
        return res.body.session as SessionView;
      };
      await report(w1, { model: 'model-a', inputTokens: 100, outputTokens: 50, cacheCreationTokens: 10, cacheReadTokens: 5, thinkingTokens: 7 });
      await report(w1, { model: 'model-b', inputTokens: 1, outputTokens: 2 });
      const s1 = await report(w1, { model: 'model-a', inputTokens: 3, outputTokens: 4, cacheCreationTokens: 0, cacheReadTokens: 1_000_000_000_000, thinkingTokens: 1 });
      const total1 = { inputTokens: 104, outputTokens: 56, cacheCreationTokens: 10, cacheReadTokens: 1_000_000_000_005, thinkingTokens: 8 };
      expect(s1).toMatchObject({ sessionId: w1.sessionId, status: 'running', sessionSettings: { tokenUsage: total1 } });
      expect((await api.getSession(member, w1.sessionId)).sessionSettings?.tokenUsage).toEqual(total1);
      const s2 = await report(w2, { model: 'model-a', inputTokens: 1000 });
      expect(s2.sessionSettings?.tokenUsage).toEqual({ inputTokens: 1000, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0, thinkingTokens: 0 });
      days.add(new Date().toISOString().slice(0, 10));

      const rows = await dailyRows(org.id);
      expect(rows).toHaveLength(2);
      expect(days.has(String(rows[0].day))).toBe(true);
      expect(rows).toEqual([
        { day: rows[0].day, userId: member.userId, model: 'model-a', inputTokens: 1103, outputTokens: 54, cacheCreationTokens: 10, cacheReadTokens: 1_000_000_000_005, thinkingTokens: 8 },
        { day: rows[0].day, userId: member.userId, model: 'model-b', inputTokens: 1, outputTokens: 2, cacheCreationTokens: 0, cacheReadTokens: 0, thinkingTokens: 0 },
      ]);
    });

    it('concurrent reports of one turn all count', async () => {
      const { org, owner, sessionId, turnId } = await api.runningSession();
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => api.usage(owner, sessionId, { turnId, model: i % 2 ? 'odd' : 'even', inputTokens: 1, outputTokens: i })),
      );
      expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
      expect((await api.getSession(owner, sessionId)).sessionSettings?.tokenUsage).toEqual({
        inputTokens: 12,
        outputTokens: 66,
        cacheCreationTokens: 0,
        cacheReadTokens: 0,
        thinkingTokens: 0,
      });
      const rows = await dailyRows(org.id);
      expect(rows.map((r) => [r.model, r.inputTokens, r.outputTokens])).toEqual([
        ['even', 6, 30],
        ['odd', 6, 36],
      ]);
    });

    it('rejects negative, fractional or non-numeric counts and a missing model with 400, counting nothing', async () => {
      const { org, owner, sessionId, turnId } = await api.runningSession();
      for (const [body, field] of [
        [{ model: 'm', inputTokens: -1 }, 'inputTokens'],
        [{ model: 'm', outputTokens: 1.5 }, 'outputTokens'],
        [{ model: 'm', cacheCreationTokens: '5' }, 'cacheCreationTokens'],
        [{ model: 'm', cacheReadTokens: null }, 'cacheReadTokens'],
        [{ model: 'm', thinkingTokens: -0.5 }, 'thinkingTokens'],
        [{ model: 'm', inputTokens: 1_000_000_000_001 }, 'inputTokens'],
        [{ inputTokens: 1 }, 'model'],
        [{ model: '' }, 'model'],
        [{ model: 'm', tokens: 1 }, 'tokens'],
      ] as Array<[object, string]>) {
        expectInvalid(await api.usage(owner, sessionId, { turnId, ...body }), field);
      }
      expect((await api.getSession(owner, sessionId)).sessionSettings?.tokenUsage).toBeUndefined();
      expect(await dailyRows(org.id)).toEqual([]);
    });
  });

  describe('turn guards', () => {
    it('a turn that ended answers 409 turn_not_active to append, usage, heartbeat and end-turn', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      expect((await api.endTurn(owner, sessionId, { turnId })).status).toBe(200);
      const calls = (turn: string) => [
        api.append(owner, sessionId, { turnId: turn, messages: [{ role: 'assistant', content: [{ type: 'text', text: 'late' }] }] }),
        api.usage(owner, sessionId, { turnId: turn, model: 'm', inputTokens: 1 }),
        api.heartbeat(owner, sessionId, { turnId: turn }),
        api.endTurn(owner, sessionId, { turnId: turn }),
      ];
      for (const res of await Promise.all(calls(turnId))) {
        expectV0Error(res, 409, 'turn_not_active');
        expect(res.body.metadata.sessionStatus).toBe('idle');
      }
      // Also when a new turn is running: the old turnId is not it.
      await api.say(owner, sessionId, 'again');
      const next = (await api.claim(owner))!;
      for (const res of await Promise.all(calls(turnId))) expectV0Error(res, 409, 'turn_not_active');
      const session = await api.getSession(owner, sessionId);
      expect(session).toMatchObject({ status: 'running', messageCount: 2 });
      expect(session.sessionSettings?.tokenUsage).toBeUndefined();
      expect((await api.heartbeat(owner, sessionId, { turnId: next.turnId })).status).toBe(200);
    });

    it('a random or malformed turnId answers 409, never 500', async () => {
      const { owner, sessionId } = await api.runningSession();
      for (const turnId of [randomUUID(), 'not-a-uuid', '', 'x'.repeat(300)]) {
        for (const res of [
          await api.append(owner, sessionId, { turnId, messages: [{ role: 'assistant', content: [] }] }),
          await api.usage(owner, sessionId, { turnId, model: 'm' }),
          await api.heartbeat(owner, sessionId, { turnId }),
          await api.endTurn(owner, sessionId, { turnId }),
        ]) {
          expectV0Error(res, 409, 'turn_not_active');
        }
      }
      expectInvalid(await api.heartbeat(owner, sessionId, { turnId: 42 }), 'turnId');
      expect((await api.getSession(owner, sessionId)).status).toBe('running');
    });

    it('an unknown or malformed session id answers 404', async () => {
      const { owner, turnId } = await api.runningSession();
      for (const id of [randomUUID(), 'nope']) {
        expectV0Error(await api.heartbeat(owner, id, { turnId }), 404, 'session_not_found');
        expectV0Error(await api.endTurn(owner, id, { turnId }), 404, 'session_not_found');
      }
    });

    it('another organization’s user gets 404 and never claims the work', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      await api.say(owner, (await api.createSession(owner)).sessionId, 'pending work');
      const stranger = await createUser(t, Role.Owner);
      for (const res of [
        await api.append(stranger, sessionId, { turnId, messages: [{ role: 'assistant', content: [] }] }),
        await api.usage(stranger, sessionId, { turnId, model: 'm' }),
        await api.heartbeat(stranger, sessionId, { turnId }),
        await api.endTurn(stranger, sessionId, { turnId }),
      ]) {
        expectV0Error(res, 404, 'session_not_found');
      }
      expect(await api.claim(stranger)).toBeNull();
      expect((await api.getSession(owner, sessionId)).status).toBe('running');
    });

    it('a guest gets 403 on every agent endpoint', async () => {
      const { org, sessionId, turnId } = await api.runningSession();
      const guest = await createUser(t, Role.Guest, org);
      for (const res of [
        await api.claimRaw(guest),
        await api.append(guest, sessionId, { turnId, messages: [{ role: 'assistant', content: [] }] }),
        await api.usage(guest, sessionId, { turnId, model: 'm' }),
        await api.heartbeat(guest, sessionId, { turnId }),
        await api.endTurn(guest, sessionId, { turnId }),
      ]) {
        expect(res.status).toBe(403);
      }
    });

    it('a member claims only their own sessions and cannot touch another member’s turn', async () => {
      const org = await createOrganization(t);
      const [alice, bob, manager] = await Promise.all([
        createUser(t, Role.Member, org),
        createUser(t, Role.Member, org),
        createUser(t, Role.Manager, org),
      ]);
      const aliceSession = await api.createSession(alice);
      await api.say(alice, aliceSession.sessionId, 'alice needs help');
      expect(await api.claim(bob)).toBeNull();
      expect((await api.getSession(alice, aliceSession.sessionId)).status).toBe('pending');
      const work = (await api.claim(alice))!;
      expect(work.sessionId).toBe(aliceSession.sessionId);
      for (const res of [
        await api.append(bob, work.sessionId, { turnId: work.turnId, messages: [{ role: 'assistant', content: [] }] }),
        await api.heartbeat(bob, work.sessionId, { turnId: work.turnId }),
        await api.endTurn(bob, work.sessionId, { turnId: work.turnId }),
      ]) {
        expectV0Error(res, 404, 'session_not_found');
      }
      // A manager may take any member's work.
      const bobSession = await api.createSession(bob);
      await api.say(bob, bobSession.sessionId, 'bob needs help');
      expect((await api.claim(manager))?.sessionId).toBe(bobSession.sessionId);
      expect((await api.endTurn(manager, work.sessionId, { turnId: work.turnId })).status).toBe(200);
    });
  });

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
        expect(before.map((s) => [s.status, s.messageCount])).toEqual([['running', 2], ['pending', 1]]);
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

  describe('Idempotency-Key', () => {
    it('a repeated claim returns the same work, replayed, and claims nothing more', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const [a, b] = [await api.createSession(owner), await api.createSession(owner)];
      await api.say(owner, a.sessionId, 'a');
      await api.say(owner, b.sessionId, 'b');
      const key = randomUUID();
      const first = await api.claimRaw(owner, {}, key);
      expect(first.status).toBe(200);
      expect(first.body.work.sessionId).toBe(a.sessionId);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const again = await api.claimRaw(owner, {}, key);
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(first.body);
      expect((await api.getSession(owner, b.sessionId)).status).toBe('pending');
      expectV0Error(await api.claimRaw(owner, { waitMs: 0 }, key), 422, 'idempotency_key_reused');
      expect((await api.getSession(owner, b.sessionId)).status).toBe('pending');
      expect((await api.claim(owner))?.sessionId).toBe(b.sessionId);
    });

    it('the same key sent twice at once claims one session', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const sessions = [await api.createSession(owner), await api.createSession(owner)];
      for (const s of sessions) await api.say(owner, s.sessionId, 'x');
      const key = randomUUID();
      const [r1, r2] = await Promise.all([api.claimRaw(owner, {}, key), api.claimRaw(owner, {}, key)]);
      expect([r1.status, r2.status]).toEqual([200, 200]);
      expect(r1.body).toEqual(r2.body);
      expect([r1.headers['idempotent-replayed'], r2.headers['idempotent-replayed']].filter(Boolean)).toEqual(['true']);
      const statuses = await Promise.all(sessions.map(async (s) => (await api.getSession(owner, s.sessionId)).status));
      expect(statuses.sort()).toEqual(['pending', 'running']);
    });

    it('append, usage and end-turn replay their answer and do nothing twice', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      const body = { turnId, messages: [{ role: 'assistant', content: [{ type: 'text', text: 'once' }] }] };
      const key = randomUUID();
      const first = await api.append(owner, sessionId, body, key);
      const again = await api.append(owner, sessionId, body, key);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(first.body);
      expectV0Error(await api.append(owner, sessionId, { ...body, messages: [...body.messages, ...body.messages] }, key), 422, 'idempotency_key_reused');
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(2);

      const usageKey = randomUUID();
      await api.usage(owner, sessionId, { turnId, model: 'm', inputTokens: 5 }, usageKey);
      const usageAgain = await api.usage(owner, sessionId, { turnId, model: 'm', inputTokens: 5 }, usageKey);
      expect(usageAgain.headers['idempotent-replayed']).toBe('true');
      expect((await api.getSession(owner, sessionId)).sessionSettings?.tokenUsage).toMatchObject({ inputTokens: 5 });

      const endKey = randomUUID();
      const ended = await api.endTurn(owner, sessionId, { turnId }, endKey);
      expect(ended.status).toBe(200);
      const endedAgain = await api.endTurn(owner, sessionId, { turnId }, endKey);
      expect(endedAgain.status).toBe(200);
      expect(endedAgain.headers['idempotent-replayed']).toBe('true');
      expect(endedAgain.body).toEqual(ended.body);
    });
  });

  describe('domain events', () => {
    it('raise message.added and session.status_changed with ids, organization, actor and from/to, numbered in commit order', async () => {
      const emitter = t.app.get(EventEmitter2);
      const seen: Array<Record<string, unknown>> = [];
      const record = (event: Record<string, unknown>) => seen.push(event);
      emitter.on('message.added', record);
      emitter.on('session.status_changed', record);
      try {
        const org = await createOrganization(t);
        const owner = await createUser(t, Role.Owner, org);
        const { sessionId } = await api.createSession(owner);
        /** This session's events since the last call, in order. */
        const drain = () => {
          const mine = seen.filter((e) => e.sessionId === sessionId);
          seen.length = 0;
          seqs.push(...mine.map((e) => e.seq as number));
          return mine;
        };
        const common = { organizationId: org.id, sessionId, occurredAt: expect.any(Date), id: expect.any(String), seq: expect.any(Number) };
        const added = (messageId: string, role: string, _seq: number, authorId: string | null) => ({
          type: 'message.added',
          ...common,
          actor: expect.objectContaining({ userId: owner.userId, kind: 'user' }),
          data: { sessionId, messageId, role, authorId, computerId: null },
        });
        const status = (from: string, to: string) => ({ type: 'session.status_changed', ...common, actor: expect.objectContaining({ userId: owner.userId }), data: { sessionId, from, to } });
        const seqs: number[] = [];

        const key = randomUUID();
        const first = await api.addMessage(owner, sessionId, 'hi', key);
        expect((await api.addMessage(owner, sessionId, 'hi', key)).headers['idempotent-replayed']).toBe('true');
        expect(drain()).toEqual([added(first.body.messageId, 'user', 1, owner.userId), status('idle', 'pending')]);

        const work = (await api.claim(owner))!;
        expect(drain()).toEqual([status('pending', 'running')]);

        const appended = await api.append(owner, sessionId, { turnId: work.turnId, messages: [{ role: 'assistant', content: [] }, { role: 'tool', content: [] }] });
        expect(drain()).toEqual([added(appended.body.messages[0].id, 'assistant', 2, null), added(appended.body.messages[1].id, 'tool', 3, null)]);

        const during = await api.say(owner, sessionId, 'while running', 'running');
        expect(drain()).toEqual([added(during, 'user', 4, owner.userId)]);

        await api.endTurn(owner, sessionId, { turnId: work.turnId });
        expect(drain()).toEqual([status('running', 'pending')]);

        const next = (await api.claim(owner))!;
        await api.endTurn(owner, sessionId, { turnId: next.turnId });
        expect(drain()).toEqual([status('pending', 'running'), status('running', 'idle')]);
        // The organization's log holds every event above, one after the other with no gap (the replay raised none).
        expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i));
      } finally {
        emitter.off('message.added', record);
        emitter.off('session.status_changed', record);
      }
    });
  });
});

describe('Agent channel leases (AGENT_LEASE_MS=1000)', () => {
  let t: TestApp;
  const api = channel(() => t);

  beforeAll(async () => {
    t = await startTestApp({ AGENT_LEASE_MS: '1000' });
  });

  afterAll(() => t.close());

  it('a turn not renewed past its lease goes to the next claim with a new turnId and the same messages, before pending work', async () => {
    const { owner, sessionId, messageId, work } = await api.runningSession();
    expect(work.leaseExpiresAt - Date.now()).toBeLessThanOrEqual(1000);
    const waiting = await api.createSession(owner);
    await api.say(owner, waiting.sessionId, 'I waited');
    await sleep(1200);
    const during = await api.say(owner, sessionId, 'are you there?', 'running');

    const retaken = (await api.claim(owner))!;
    expect(retaken.sessionId).toBe(sessionId);
    expect(retaken.turnId).not.toBe(work.turnId);
    expect(retaken.session.status).toBe('running');
    expect(retaken.messages.map((m) => m.id)).toEqual([messageId, during]);
    expect(retaken.leaseExpiresAt).toBeGreaterThan(work.leaseExpiresAt);

    for (const res of [
      await api.heartbeat(owner, sessionId, { turnId: work.turnId }),
      await api.append(owner, sessionId, { turnId: work.turnId, messages: [{ role: 'assistant', content: [] }] }),
      await api.usage(owner, sessionId, { turnId: work.turnId, model: 'm' }),
      await api.endTurn(owner, sessionId, { turnId: work.turnId }),
    ]) {
      expectV0Error(res, 409, 'turn_not_active');
    }
    expect((await api.claim(owner))?.sessionId).toBe(waiting.sessionId);
    const ended = await api.endTurn(owner, sessionId, { turnId: retaken.turnId });
    expect(ended.body.session).toMatchObject({ status: 'idle', messageCount: 2 });
  });

  it('two agents asking at once never get the same expired turn', async () => {
    const org = await createOrganization(t);
    const [owner, manager] = await Promise.all([createUser(t, Role.Owner, org), createUser(t, Role.Manager, org)]);
    const N = 4;
    const sessions = await Promise.all(Array.from({ length: N }, () => api.createSession(owner)));
    for (const s of sessions) await api.say(owner, s.sessionId, 'work');
    const first = await Promise.all(sessions.map(() => api.claim(owner)));
    await sleep(1100);
    const results = await Promise.all(Array.from({ length: 2 * N }, (_, i) => api.claimRaw(i % 2 ? owner : manager)));
    const retaken = results.map((r) => r.body.work as Work | null).filter((w): w is Work => w !== null);
    expect(retaken.map((w) => w.sessionId).sort()).toEqual(sessions.map((s) => s.sessionId).sort());
    expect(retaken.map((w) => w.turnId).filter((id) => first.some((f) => f?.turnId === id))).toEqual([]);
  });

  it('a waiting claim takes a turn whose lease runs out while it waits', async () => {
    const { owner, sessionId, work } = await api.runningSession();
    const started = Date.now();
    const res = await api.claimRaw(owner, { waitMs: 4000 });
    const took = Date.now() - started;
    expect(res.body.work).toMatchObject({ sessionId, messages: work.messages.map((m) => ({ id: m.id })) });
    expect(res.body.work.turnId).not.toBe(work.turnId);
    // Nothing signals an expiry: the poll times its next look to the queue’s next lease expiry.
    expect(took).toBeGreaterThanOrEqual(work.leaseExpiresAt - started - 50);
    expect(took).toBeLessThan(3000);
  });

  it('a turn past its lease that no one took yet may still renew and end it', async () => {
    const { owner, sessionId, turnId } = await api.runningSession();
    await sleep(1200);
    expect((await api.heartbeat(owner, sessionId, { turnId })).status).toBe(200);
    expect(await api.claim(owner)).toBeNull();
    expect((await api.endTurn(owner, sessionId, { turnId })).body.session.status).toBe('idle');
  });

  it('heartbeats keep a turn alive past the lease', async () => {
    const { owner, sessionId, turnId, work } = await api.runningSession();
    let lease = work.leaseExpiresAt;
    for (let i = 0; i < 4; i++) {
      await sleep(400);
      const res = await api.heartbeat(owner, sessionId, { turnId });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ leaseExpiresAt: expect.any(Number), interrupted: false });
      expect(res.body.leaseExpiresAt).toBeGreaterThan(lease);
      lease = res.body.leaseExpiresAt;
    }
    expect(Date.now()).toBeGreaterThan(work.leaseExpiresAt + 300);
    expect(await api.claim(owner)).toBeNull();
    expect((await api.endTurn(owner, sessionId, { turnId })).body.session.status).toBe('idle');
  });

  it('appending messages and reporting usage renew the lease too', async () => {
    const { owner, sessionId, turnId, work } = await api.runningSession();
    await sleep(600);
    expect((await api.append(owner, sessionId, { turnId, messages: [{ role: 'assistant', content: [] }] })).status).toBe(200);
    await sleep(600);
    expect((await api.usage(owner, sessionId, { turnId, model: 'm', outputTokens: 1 })).status).toBe(200);
    await sleep(600);
    expect(Date.now()).toBeGreaterThan(work.leaseExpiresAt + 500);
    expect(await api.claim(owner)).toBeNull();
    expect((await api.endTurn(owner, sessionId, { turnId })).status).toBe(200);
  });

  it('the agent that takes over an expired turn reads the whole conversation; the old turn is 409, and could read until then', async () => {
    const { owner, sessionId, turnId, work } = await api.runningSession();
    const appended = await api.append(owner, sessionId, { turnId, messages: [{ role: 'assistant', content: [{ type: 'text', text: 'halfway' }] }] });
    expect(appended.status).toBe(200);
    await sleep(1200);
    // Past its lease but not yet taken over, the turn is still the running one.
    const late = await api.conversation(owner.auth, sessionId, { turnId });
    expect(late.status).toBe(200);
    expect(late.body.messages).toEqual([...work.messages, ...appended.body.messages]);
    const during = await api.say(owner, sessionId, 'are you there?', 'running');
    const retaken = (await api.claim(owner))!;
    expect(retaken.sessionId).toBe(sessionId);
    const gone = await api.conversation(owner.auth, sessionId, { turnId });
    expectV0Error(gone, 409, 'turn_not_active');
    expect(gone.body.metadata.sessionStatus).toBe('running');
    const read = await api.conversation(owner.auth, sessionId, { turnId: retaken.turnId });
    expect(read.status).toBe(200);
    expect(read.body.messages.map((m: MessageView) => [m.role, m.id])).toEqual([
      ['user', work.messages[0].id],
      ['assistant', appended.body.messages[0].id],
      ['user', during],
    ]);
    expect((await api.endTurn(owner, sessionId, { turnId: retaken.turnId })).status).toBe(200);
  });
});

describe('Agent channel shutdown', () => {
  it('answers waiting claims at once instead of holding shutdown for their waitMs', async () => {
    const t = await startTestApp();
    const api = channel(() => t);
    const owner = await createUser(t, Role.Owner);
    const waiting = api.claimRaw(owner, { waitMs: 4000 }).then(
      (res) => ({ status: res.status, body: res.body as unknown }),
      (error: Error) => ({ status: 0, body: error.message as unknown }),
    );
    await sleep(300);
    const started = Date.now();
    await t.close();
    const closeTook = Date.now() - started;
    expect(await waiting).toEqual({ status: 200, body: { work: null } });
    expect(closeTook).toBeLessThan(2000);
  });
});

import { PlatformClient } from '../../src/agent/platform-client';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { Body } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';

const KiB = 1024;
/** The budget of a page in this file: two messages of ~90 KiB fit, a third does not. */
const BUDGET = 200 * KiB;

interface PageBody {
  messages: Body[];
  pagination: { hasMore: boolean; nextCursor: string | null };
}

/**
 * MESSAGE_PAGE_MAX_BYTES: a page of messages stops before the message that would take it past the
 * budget, says there is more, and the cursor continues at exactly that message.
 */
describe('Message pages within MESSAGE_PAGE_MAX_BYTES', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startTestApp({ MESSAGE_PAGE_MAX_BYTES: String(BUDGET) });
    owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
  });

  afterAll(() => t.close());

  async function newSession(user = owner): Promise<string> {
    const res = await t.http().post('/api/v0/sessions').set(user.auth).send({});
    expect(res.status).toBe(201);
    return res.body.sessionId as string;
  }

  /** Adds user messages with the given texts; their ids in order. */
  async function say(sessionId: string, texts: string[], user = owner): Promise<string[]> {
    const ids: string[] = [];
    for (const text of texts) {
      const res = await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(user.auth).send({ text });
      expect(res.status).toBe(200);
      ids.push(res.body.messageId as string);
    }
    return ids;
  }

  /** A text of `kib` KiB whose first characters say which it is. */
  const sized = (label: string, kib: number) => `${label} `.padEnd(kib * KiB, 'x');

  async function read(path: string, query: Record<string, string>, user = owner): Promise<PageBody> {
    const res = await t
      .http()
      .get(`${path}?${new URLSearchParams(query).toString()}`)
      .set(user.auth);
    expect({ status: res.status, body: res.status === 200 ? 'ok' : res.body }).toEqual({ status: 200, body: 'ok' });
    return res.body as PageBody;
  }

  /** Every page from the first, following nextCursor until hasMore is false. */
  async function walk(path: string, query: Record<string, string>, user = owner): Promise<PageBody[]> {
    const pages: PageBody[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 50; i++) {
      const page = await read(path, { ...query, ...(cursor ? { cursor } : {}) }, user);
      pages.push(page);
      expect(page.pagination.nextCursor === null).toBe(!page.pagination.hasMore);
      if (!page.pagination.hasMore) return pages;
      expect(page.messages.length).toBeGreaterThan(0);
      cursor = page.pagination.nextCursor!;
    }
    throw new Error('more than 50 pages');
  }

  const messagesOf = (sessionId: string) => `/api/v0/sessions/${sessionId}/messages`;
  const ids = (pages: PageBody[]) => pages.flatMap((page) => page.messages.map((m) => m.id as string));

  it('the operations that answer pages of messages, and only they, write them a message at a time (large-answers.ts)', () => {
    const routes = t.app.getHttpAdapter().getInstance().printRoutes({ includeHooks: true, commonPrefix: false });
    const sliced: string[] = [];
    let route = '';
    for (const line of routes.split('\n')) {
      route = /(\/\S*) \(([A-Z, ]+)\)/.exec(line)?.slice(1, 3).reverse().join(' ') ?? route;
      if (line.includes('serializeInSlices')) sliced.push(route);
    }
    // The tree prints a path under its parent, so the sessions' lists of messages show as their last segments.
    expect(sliced.filter((r) => !r.startsWith('HEAD'))).toEqual(['GET /messages', 'POST /api/v0/agent/claims', 'GET /:sessionId/messages']);
  });

  it('a page of limit 50 over ~90 KiB messages holds 2, says there is more, and the cursor continues with message 3', async () => {
    const sessionId = await newSession();
    const sent = await say(
      sessionId,
      Array.from({ length: 7 }, (_, i) => sized(`m${i + 1}`, 90)),
    );

    const first = await read(messagesOf(sessionId), { limit: '50' });
    expect(first.messages.map((m) => m.id)).toEqual(sent.slice(0, 2));
    expect(first.pagination.hasMore).toBe(true);
    expect(first.pagination.nextCursor).toEqual(expect.any(String));
    // The messages come whole.
    expect(first.messages[0].content[0].text).toBe(sized('m1', 90));

    const second = await read(messagesOf(sessionId), { limit: '50', cursor: first.pagination.nextCursor! });
    expect(second.messages[0].id).toBe(sent[2]);

    const pages = await walk(messagesOf(sessionId), { limit: '50' });
    expect(pages.map((page) => page.messages.length)).toEqual([2, 2, 2, 1]);
    expect(ids(pages)).toEqual(sent);
  });

  it('the limit still applies when the budget allows more, and small messages fill a page up to the budget', async () => {
    const sessionId = await newSession();
    // 30 of 10 KiB: 300 KiB in all, so a page holds 19 (190 KiB and a little) when the limit allows.
    const sent = await say(
      sessionId,
      Array.from({ length: 30 }, (_, i) => sized(`s${i + 1}`, 10)),
    );
    const limited = await walk(messagesOf(sessionId), { limit: '5' });
    expect(limited.map((page) => page.messages.length)).toEqual([5, 5, 5, 5, 5, 5]);
    expect(ids(limited)).toEqual(sent);
    const budgeted = await walk(messagesOf(sessionId), { limit: '100' });
    expect(budgeted.map((page) => page.messages.length)).toEqual([19, 11]);
    expect(ids(budgeted)).toEqual(sent);
  });

  it('a message larger than the budget comes alone, between pages of the others', async () => {
    const sessionId = await newSession();
    // Bytes count, not characters: 130,000 two-byte characters are ~254 KiB, past the 200 KiB budget.
    const huge = 'é'.repeat(130_000);
    const sent = await say(sessionId, [sized('a', 90), huge, sized('b', 90), sized('c', 90), huge, huge]);
    const pages = await walk(messagesOf(sessionId), { limit: '50' });
    expect(pages.map((page) => page.messages.map((m) => m.id))).toEqual([[sent[0]], [sent[1]], [sent[2], sent[3]], [sent[4]], [sent[5]]]);
    expect(pages[1].messages[0].content[0].text).toBe(huge);
  });

  it('order=newest pages back from the latest message within the same budget; a cursor of one order is 400 in the other', async () => {
    const sessionId = await newSession();
    const sent = await say(sessionId, ['n1', sized('n2', 90), sized('n3', 90), 'n4', sized('n5', 90), sized('n6', 90), sized('n7', 90)]);
    const newest = await walk(messagesOf(sessionId), { limit: '3', order: 'newest' });
    // n7 and n6 (~90 KiB each), not n5 (past the budget); then n5, n4, n3 (the limit); then n2, n1.
    expect(newest.map((page) => page.messages.map((m) => m.id))).toEqual([
      [sent[6], sent[5]],
      [sent[4], sent[3], sent[2]],
      [sent[1], sent[0]],
    ]);
    const oldest = await read(messagesOf(sessionId), { limit: '1' });
    const crossed = await t
      .http()
      .get(`${messagesOf(sessionId)}?order=newest&cursor=${encodeURIComponent(oldest.pagination.nextCursor!)}`)
      .set(owner.auth);
    expect(crossed.status).toBe(400);
    expect(
      (
        await t
          .http()
          .get(`${messagesOf(sessionId)}?order=latest`)
          .set(owner.auth)
      ).status,
    ).toBe(400);
  });

  it('with a role filter the budget counts only the messages of that role', async () => {
    // An organization of its own: the claim below takes this session's work, not the others' (all pending).
    const user = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    const sessionId = await newSession(user);
    const sent = await say(sessionId, [sized('u1', 90), sized('u2', 90), sized('u3', 90)], user);
    // The agent answers with small messages and large ones.
    const claim = await t.http().post('/api/v0/agent/claims').set(user.auth).send({});
    expect(claim.status).toBe(200);
    expect(claim.body.work.sessionId).toBe(sessionId);
    const turnId = claim.body.work.turnId as string;
    const answer = (text: string) => ({ role: 'assistant', content: [{ type: 'text', text }] });
    const big = (label: string) => answer(sized(label, 150));
    const appended = await t
      .http()
      .post(`/api/v0/agent/sessions/${sessionId}/messages`)
      .set(user.auth)
      .send({ turnId, messages: [answer('small 1'), big('big 1'), answer('small 2'), big('big 2'), answer('small 3')] });
    expect(appended.status).toBe(200);
    const answers = (appended.body.messages as Body[]).map((m) => m.id as string);

    const users = await walk(messagesOf(sessionId), { limit: '50', role: 'user' }, user);
    expect(users.map((page) => page.messages.length)).toEqual([2, 1]);
    expect(ids(users)).toEqual(sent);
    const assistants = await walk(messagesOf(sessionId), { limit: '50', role: 'assistant' }, user);
    expect(assistants.map((page) => page.messages.length)).toEqual([3, 2]);
    expect(ids(assistants)).toEqual(answers);

    // The agent's read of its turn's conversation is paged the same way, over every role.
    const agent = await walk(`/api/v0/agent/sessions/${sessionId}/messages`, { limit: '50', turnId }, user);
    expect(agent.map((page) => page.messages.length)).toEqual([2, 2, 2, 2]);
    expect(ids(agent)).toEqual([...sent, ...answers]);
  });

  it('a claim carries the turn’s user messages within the budget and a cursor to the rest, which the conversation list continues exactly', async () => {
    const user = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    const small = await newSession(user);
    await say(small, ['hello'], user);
    const first = await t.http().post('/api/v0/agent/claims').set(user.auth).send({});
    expect(first.body.work).toMatchObject({ sessionId: small, messagesCursor: null });
    expect(first.body.work.messages).toHaveLength(1);

    const large = await newSession(user);
    const sent = await say(large, [sized('c1', 90), sized('c2', 90), sized('c3', 90), sized('c4', 195), sized('c5', 10)], user);
    const claim = await t.http().post('/api/v0/agent/claims').set(user.auth).send({});
    expect(claim.body.work.sessionId).toBe(large);
    expect((claim.body.work.messages as Body[]).map((m) => m.id)).toEqual(sent.slice(0, 2));
    expect(claim.body.work.messagesCursor).toEqual(expect.any(String));
    expect(claim.text.length).toBeLessThan(BUDGET + 20 * KiB);

    const rest = await walk(
      `/api/v0/agent/sessions/${large}/messages`,
      { limit: '50', turnId: claim.body.work.turnId as string, cursor: claim.body.work.messagesCursor as string },
      user,
    );
    expect(ids(rest)).toEqual(sent.slice(2));
    // Each of the rest fills most of a page: one a page.
    expect(rest.map((page) => page.messages.length)).toEqual([1, 1, 1]);
  });

  it('the reference agent’s client reads the rest of a claim that did not fit, and gets every user message of the turn in order', async () => {
    const user = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    const sessionId = await newSession(user);
    const sent = await say(sessionId, [sized('d1', 90), sized('d2', 90), sized('d3', 90), 'd4'], user);
    const address = t.app.getHttpServer().address() as { port: number };
    const client = new PlatformClient({ baseUrl: `http://127.0.0.1:${address.port}`, token: user.key, retryWindowMs: 0 });
    const work = await client.claim(0);
    expect(work?.sessionId).toBe(sessionId);
    expect(work?.messages.map((m) => m.id)).toEqual(sent);
  });

  it('with message history off, the agent channel serves the turn’s own messages (the claim’s messagesCursor on) and refuses what came before', async () => {
    const user = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: false }));
    const sessionId = await newSession(user);
    // An earlier turn: history, once it is over.
    await say(sessionId, ['earlier question'], user);
    const earlier = await t.http().post('/api/v0/agent/claims').set(user.auth).send({});
    expect(earlier.body.work.sessionId).toBe(sessionId);
    const ended = await t.http().post(`/api/v0/agent/sessions/${sessionId}/end-turn`).set(user.auth).send({ turnId: earlier.body.work.turnId });
    expect(ended.status).toBe(200);

    const sent = await say(sessionId, [sized('h1', 120), sized('h2', 120), 'h3'], user);
    const claim = await t.http().post('/api/v0/agent/claims').set(user.auth).send({});
    const work = claim.body.work as Body;
    expect((work.messages as Body[]).map((m) => m.id)).toEqual(sent.slice(0, 1));
    const path = `/api/v0/agent/sessions/${sessionId}/messages`;
    const refused = await t
      .http()
      .get(`${path}?turnId=${work.turnId as string}`)
      .set(user.auth);
    expect(refused.status).toBe(403);
    expect(refused.body.metadata.code).toBe('message_history_disabled');
    expect(JSON.stringify(refused.body)).not.toContain('earlier question');
    const rest = await walk(path, { limit: '50', turnId: work.turnId as string, cursor: work.messagesCursor as string }, user);
    expect(ids(rest)).toEqual(sent.slice(1));
  });
});

import { randomUUID } from 'node:crypto';
import Ajv, { ValidateFunction } from 'ajv';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { AgentPresence } from '../../src/modules/agent-channel/agent-presence';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { openClaim } from '../utils/raw-claims';
import { serverUrl } from '../utils/test-database';
import { startTestApp, TestApp } from '../utils/test-app';

/**
 * No silent dead ends: a pending session that no agent will take says so (`statusReason` on the
 * session, `warnings` on add-message), over real HTTP. Each test has an organization of its own,
 * so one test's agents never count for another's sessions.
 */

type Auth = { Authorization: string };
type Reason = { code: string; message: string };

describe('Sessions no agent will take', () => {
  let t: TestApp;
  let validateSession: ValidateFunction;
  let validateAddMessage: ValidateFunction;

  beforeAll(async () => {
    t = await startTestApp();
    const doc = (await t.http().get('/docs-json')).body as Record<string, unknown>;
    // Without Ajv's `discriminator` option, which refuses the document's explicit `mapping`: `oneOf` picks the same branch.
    const ajv = new Ajv({ strict: false });
    ajv.addSchema({ ...doc, $id: 'openapi' });
    validateSession = ajv.compile({ $ref: 'openapi#/components/schemas/Session' });
    validateAddMessage = ajv.compile({ $ref: 'openapi#/paths/~1api~1v0~1sessions~1{sessionId}~1messages/post/responses/200/content/application~1json/schema' });
  });

  afterAll(() => t.close());

  const valid = (validate: ValidateFunction, value: unknown) => {
    validate(value);
    expect(validate.errors ?? []).toEqual([]);
  };

  async function team() {
    const org = await createOrganization(t);
    return { owner: await createUser(t, Role.Owner, org), member: await createUser(t, Role.Member, org), member2: await createUser(t, Role.Member, org) };
  }

  async function session(user: TestUser, body: Record<string, unknown> = {}): Promise<string> {
    const res = await t.http().post('/api/v0/sessions').set(user.auth).send(body);
    expect(res.status).toBe(201);
    return res.body.sessionId as string;
  }

  async function say(user: TestUser, sessionId: string, extra: Record<string, unknown> = {}) {
    const res = await t
      .http()
      .post(`/api/v0/sessions/${sessionId}/messages`)
      .set(user.auth)
      .send({ text: 'Please fix the build.', ...extra });
    expect(res.status).toBe(200);
    valid(validateAddMessage, res.body);
    return res.body as { messageId: string; status: string; warnings?: Reason[] };
  }

  async function view(user: TestUser, sessionId: string) {
    const res = await t.http().get(`/api/v0/sessions/${sessionId}`).set(user.auth);
    expect(res.status).toBe(200);
    valid(validateSession, res.body);
    return res.body as { status: string; statusReason?: Reason };
  }

  async function computer(owner: TestUser): Promise<{ id: string; auth: Auth }> {
    const res = await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: `box-${randomUUID().slice(0, 6)}`, provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
    expect(res.status).toBe(201);
    return { id: res.body.id as string, auth: { Authorization: `Bearer ${res.body.agentToken as string}` } };
  }

  /** One claim that finds nothing: an agent asking for work. */
  async function poll(auth: Auth, body: Record<string, unknown> = {}) {
    const res = await t.http().post('/api/v0/agent/claims').set(auth).send(body);
    expect(res.status).toBe(200);
    return res.body as { work: { sessionId: string } | null };
  }

  it('a session without a computer, in an organization no agent polls, says no agent will take it', async () => {
    const { owner } = await team();
    const id = await session(owner, { title: 'Nobody home' });
    // Idle: nothing is waiting, so nothing to say.
    expect((await view(owner, id)).statusReason).toBeUndefined();

    const added = await say(owner, id);
    expect(added.status).toBe('pending');
    expect(added.warnings).toEqual([{ code: 'no_agent_for_organization', message: expect.stringMatching(/no agent/i) }]);
    expect(added.warnings![0].message).toMatch(/computerId/);
    const seen = await view(owner, id);
    expect(seen).toMatchObject({ status: 'pending', statusReason: added.warnings![0] });

    const list = await t.http().get('/api/v0/sessions').set(owner.auth);
    expect(list.body.sessions.find((s: { sessionId: string }) => s.sessionId === id).statusReason).toEqual(added.warnings![0]);
    // The message was stored all the same.
    expect((await view(owner, id)).status).toBe('pending');
  });

  it('a session whose computer has no agent polling names the computer; once its agent polls, no warning', async () => {
    const { owner } = await team();
    const box = await computer(owner);
    const id = await session(owner, { computerId: box.id });
    const first = await say(owner, id);
    expect(first.warnings).toEqual([{ code: 'no_agent_for_computer', message: expect.stringContaining(box.id) }]);

    // The computer's agent comes up and takes the waiting work; then it keeps polling.
    expect((await poll(box.auth)).work?.sessionId).toBe(id);
    const claimed = await view(owner, id);
    expect(claimed).toMatchObject({ status: 'running' });
    expect(claimed.statusReason).toBeUndefined();

    const other = await session(owner, { computerId: box.id });
    const waiting = openClaim(t, box.auth, { waitMs: 5_000 });
    const added = await say(owner, other);
    expect(added).toEqual({ messageId: expect.any(String), status: 'pending' });
    expect((await view(owner, other)).statusReason).toBeUndefined();
    // And the waiting agent does take it.
    const answer = await waiting.answer;
    expect(answer !== 'cut' && answer.body.work?.sessionId).toBe(other);
  });

  it("a computer's agent does not take unrouted work, so it does not silence the warning for a session without a computer", async () => {
    const { owner } = await team();
    const box = await computer(owner);
    await poll(box.auth);
    const id = await session(owner);
    expect((await say(owner, id)).warnings?.[0].code).toBe('no_agent_for_organization');
    // Routing this message to the polling computer is the way out.
    const routed = await say(owner, id, { computerId: box.id });
    expect(routed.warnings).toBeUndefined();
    expect((await view(owner, id)).statusReason).toBeUndefined();
  });

  it('an agent polling another computer does not count', async () => {
    const { owner } = await team();
    const [busy, idle] = [await computer(owner), await computer(owner)];
    await poll(busy.auth);
    const id = await session(owner, { computerId: idle.id });
    expect((await say(owner, id)).warnings?.[0]).toMatchObject({ code: 'no_agent_for_computer', message: expect.stringContaining(idle.id) });
  });

  it("a member's agent takes only that member's sessions; an owner's agent takes everyone's", async () => {
    const { owner, member, member2 } = await team();
    await poll(member.auth);
    const mine = await session(member);
    const theirs = await session(member2);
    expect((await say(member, mine)).warnings).toBeUndefined();
    expect((await say(member2, theirs)).warnings?.[0].code).toBe('no_agent_for_organization');

    await poll(owner.auth);
    expect((await view(member2, theirs)).statusReason).toBeUndefined();
    expect((await say(member2, theirs)).warnings).toBeUndefined();
  });

  it('agents of another organization do not count', async () => {
    const a = await team();
    const b = await team();
    await poll(b.owner.auth);
    const id = await session(a.owner);
    expect((await say(a.owner, id)).warnings?.[0].code).toBe('no_agent_for_organization');
  });

  it('an Idempotency-Key replay says what is true now', async () => {
    const { owner } = await team();
    const id = await session(owner);
    const send = () => t.http().post(`/api/v0/sessions/${id}/messages`).set(owner.auth).set('Idempotency-Key', 'same-key').send({ text: 'hello' });
    const first = await send();
    expect(first.body.warnings?.[0].code).toBe('no_agent_for_organization');
    await poll(owner.auth, {});
    // The agent took the message; the replay is the same answer without the stale warning.
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ messageId: first.body.messageId, status: 'pending' });
  });

  (serverUrl() ? it : it.skip)('an agent polling one instance counts on another (PostgreSQL)', async () => {
    const other = await startTestApp({}, t.database);
    try {
      const { owner } = await team();
      const box = await computer(owner);
      const res = await other.http().post('/api/v0/agent/claims').set(box.auth).send({});
      expect(res.status).toBe(200);
      const id = await session(owner, { computerId: box.id });
      expect((await say(owner, id)).warnings).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('an agent counts for 90 s after its last claim, and a queue silent for a week is forgotten', async () => {
    const presence = t.app.get(AgentPresence);
    const { owner } = await team();
    const box = await computer(owner);
    const queue = { computerId: box.id };
    const start = Date.now() - 10 * 86_400_000;
    const live = async (at: number) => (await presence.liveQueues(owner.organizationId, at)).map((q) => q.computerId);

    await presence.seen(owner.organizationId, queue, start);
    expect(await live(start + 89_000)).toEqual([box.id]);
    expect(await live(start + 91_000)).toEqual([]);
    // A claim refreshes it (an instance writes at most every 15 s).
    await presence.seen(owner.organizationId, queue, start + 60_000);
    expect(await live(start + 140_000)).toEqual([box.id]);

    const rows = () => t.app.get(DataSource).query(`SELECT queue FROM agent_presence WHERE organization_id = $1`, [owner.organizationId]);
    expect(await rows()).toHaveLength(1);
    // Eight days later an agent claims unrouted work: the computer's silent queue goes, the new one stays.
    await presence.seen(owner.organizationId, { computerId: null }, start + 8 * 86_400_000);
    expect(await rows()).toEqual([{ queue: '|' }]);
  });
});

import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { expectV0Error } from '../utils/v0-errors';
import { startTestApp, TestApp } from '../utils/test-app';

/**
 * Computers' agent tokens over real HTTP: shown once and stored hashed, accepted on the agent
 * channel only, limited to the work routed to their computer, rotated, and dead with their
 * computer; the agent's connect call; sessions' `computerId` checks against real computers.
 * Every test works in an organization of its own, so the work queues of tests never mix.
 */

const TOKEN_SHAPE = /^cpt_[A-Za-z0-9_-]{43}$/;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Body = Record<string, any>;

interface Work {
  turnId: string;
  sessionId: string;
  leaseExpiresAt: number;
  session: Body;
  messages: Body[];
}

/** A credential as request headers: a user's API key, or a computer's agent token. */
type Auth = { Authorization: string };
const bearer = (token: string): Auth => ({ Authorization: `Bearer ${token}` });


const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The helpers every test of the file uses, bound to the app of its describe block. */
function helpers(getApp: () => TestApp) {
  const http = () => getApp().http();
  const api = {
    /** A byom computer of `user`: its view from the create response (with `agentToken`). */
    async createComputer(user: TestUser, name = 'laptop'): Promise<Body & { id: string; agentToken: string; auth: Auth }> {
      const res = await http().post('/api/v0/computers').set(user.auth).send({ name, provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
      expect(res.status).toBe(201);
      return { ...(res.body as Body), id: res.body.id as string, agentToken: res.body.agentToken as string, auth: bearer(res.body.agentToken as string) };
    },
    async createSession(user: TestUser, body: object = {}): Promise<string> {
      const res = await http().post('/api/v0/sessions').set(user.auth).send(body);
      expect(res.status).toBe(201);
      return res.body.sessionId as string;
    },
    /** Adds a user message (routed to `computerId` when given) and returns its id. */
    async say(user: TestUser, sessionId: string, text: string, computerId?: string): Promise<string> {
      const res = await http()
        .post(`/api/v0/sessions/${sessionId}/messages`)
        .set(user.auth)
        .send(computerId ? { text, computerId } : { text });
      expect(res.status).toBe(200);
      return res.body.messageId as string;
    },
    /** A new session of `user` with one user message, pending for `computerId` (unrouted without). */
    async pendingWork(user: TestUser, text: string, computerId?: string): Promise<{ sessionId: string; messageId: string }> {
      const sessionId = await api.createSession(user);
      return { sessionId, messageId: await api.say(user, sessionId, text, computerId) };
    },
    async getSession(user: TestUser, sessionId: string): Promise<Body> {
      const res = await http().get(`/api/v0/sessions/${sessionId}`).set(user.auth);
      expect(res.status).toBe(200);
      return res.body as Body;
    },
    claimRaw: (auth: Auth, body: object = {}) => http().post('/api/v0/agent/claims').set(auth).send(body),
    async claim(auth: Auth, body: object = {}): Promise<Work | null> {
      const res = await api.claimRaw(auth, body);
      expect(res.status).toBe(200);
      return res.body.work as Work | null;
    },
    append: (auth: Auth, sessionId: string, turnId: string, text = 'on it') =>
      http()
        .post(`/api/v0/agent/sessions/${sessionId}/messages`)
        .set(auth)
        .send({ turnId, messages: [{ role: 'assistant', content: [{ type: 'text', text }] }] }),
    usage: (auth: Auth, sessionId: string, turnId: string) =>
      http().post(`/api/v0/agent/sessions/${sessionId}/usage`).set(auth).send({ turnId, model: 'model-a', inputTokens: 10, outputTokens: 5 }),
    endTurn: (auth: Auth, sessionId: string, turnId: string) => http().post(`/api/v0/agent/sessions/${sessionId}/end-turn`).set(auth).send({ turnId }),
    rotate: (user: TestUser, computerId: string) => http().post(`/api/v0/computers/${computerId}/agent-token`).set(user.auth).send(),
    connect: (auth: Auth, body: object) => http().post('/api/v0/agent/connect').set(auth).send(body),
    /** The organization's owner and a fresh computer of theirs. */
    async ownerWithComputer() {
      const org = await createOrganization(getApp());
      const owner = await createUser(getApp(), Role.Owner, org);
      const computer = await api.createComputer(owner);
      return { org, owner, computer };
    },
  };
  return api;
}

describe('Computer agents', () => {
  let t: TestApp;
  const api = helpers(() => t);
  const http = () => t.http();

  beforeAll(async () => {
    t = await startTestApp({ PROVISIONING_CONCURRENCY: '0', AUTH_CACHE_MS: '0' });
  });

  afterAll(() => t.close());

  describe('the agent token', () => {
    it('is shown once, in the create response, and stored only as its SHA-256 hash', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      expect(computer.agentToken).toMatch(TOKEN_SHAPE);

      const got = await http().get(`/api/v0/computers/${computer.id}`).set(owner.auth).expect(200);
      expect(got.body.id).toBe(computer.id);
      expect(got.body).not.toHaveProperty('agentToken');
      expect(JSON.stringify(got.body)).not.toContain(computer.agentToken);
      const list = await http().get('/api/v0/computers').set(owner.auth).expect(200);
      const listed = (list.body.computers as Body[]).find((c) => c.id === computer.id);
      expect(listed).toBeDefined();
      expect(listed).not.toHaveProperty('agentToken');
      expect(JSON.stringify(list.body)).not.toContain(computer.agentToken);

      const db = t.app.get(DataSource);
      const [row] = (await db.query(`SELECT agent_token_hash, row_to_json(c)::text AS everything FROM computers c WHERE id = $1`, [computer.id])) as Array<{
        agent_token_hash: string;
        everything: string;
      }>;
      expect(row.agent_token_hash).toBe(sha256(computer.agentToken));
      expect(row.everything).not.toContain(computer.agentToken);
      // Not even the random part without its prefix.
      expect(row.everything).not.toContain(computer.agentToken.slice(4));
    });

    it('gives each computer a token of its own', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      const second = await api.createComputer(owner, 'desktop');
      expect(second.agentToken).toMatch(TOKEN_SHAPE);
      expect(second.agentToken).not.toBe(computer.agentToken);
    });

    it('works on the agent channel and nowhere else (403 computer_token_not_accepted)', async () => {
      const { computer } = await api.ownerWithComputer();
      const claimed = await api.claimRaw(computer.auth);
      expect(claimed.status).toBe(200);
      expect(claimed.body).toEqual({ work: null });

      const elsewhere: Array<[string, Response]> = [
        ['GET /api/v0/sessions', await http().get('/api/v0/sessions').set(computer.auth)],
        ['POST /api/v0/sessions', await http().post('/api/v0/sessions').set(computer.auth).send({})],
        ['GET /api/v0/computers', await http().get('/api/v0/computers').set(computer.auth)],
        ['GET /api/v0/computers/{id}', await http().get(`/api/v0/computers/${computer.id}`).set(computer.auth)],
        ['POST /api/v0/computers/{id}/agent-token', await http().post(`/api/v0/computers/${computer.id}/agent-token`).set(computer.auth).send()],
        ['POST /settings/api-keys', await http().post('/settings/api-keys').set(computer.auth).send({ name: 'escalate' })],
      ];
      for (const [route, res] of elsewhere) {
        expect({ route, status: res.status, code: res.body?.metadata?.code }).toEqual({ route, status: 403, code: 'computer_token_not_accepted' });
      }
    });

    it('answers 401 when malformed, and 401 invalid_credentials when well formed but unknown', async () => {
      const malformed = await api.claimRaw(bearer('cpt_x'));
      expect(malformed.status).toBe(401);
      expect(malformed.body.metadata.code).toEqual(expect.any(String));

      const unknown = `cpt_${randomBytes(32).toString('base64url')}`;
      expect(unknown).toMatch(TOKEN_SHAPE);
      expectV0Error(await api.claimRaw(bearer(unknown)), 401, 'invalid_credentials');
      expectV0Error(await api.connect(bearer(unknown), { hostname: 'build-01' }), 401, 'invalid_credentials');
    });
  });

  describe('the work a token reaches', () => {
    it('is never replayed to another computer of the same owner through an Idempotency-Key', async () => {
      const { owner, computer: a } = await api.ownerWithComputer();
      const b = await api.createComputer(owner, 'desktop');
      await api.pendingWork(owner, 'for A only', a.id);
      const first = await http().post('/api/v0/agent/claims').set(a.auth).set('Idempotency-Key', 'same-key').send({}).expect(200);
      expect(first.body.work.messages[0].content[0].text).toBe('for A only');
      const other = await http().post('/api/v0/agent/claims').set(b.auth).set('Idempotency-Key', 'same-key').send({}).expect(200);
      expect(other.headers['idempotent-replayed']).toBeUndefined();
      expect(other.body.work).toBeNull();
      const again = await http().post('/api/v0/agent/claims').set(a.auth).set('Idempotency-Key', 'same-key').send({}).expect(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.work.turnId).toBe(first.body.work.turnId);
    });

    it('keeps the running turn when a user routes new work to another computer mid-turn', async () => {
      const { owner, computer: a } = await api.ownerWithComputer();
      const b = await api.createComputer(owner, 'desktop');
      const { sessionId } = await api.pendingWork(owner, 'start on A', a.id);
      const work = (await api.claim(a.auth))!;
      await api.say(owner, sessionId, 'continue on B', b.id);
      expect((await api.append(a.auth, sessionId, work.turnId)).status).toBe(200);
      expect((await api.endTurn(a.auth, sessionId, work.turnId)).status).toBe(200);
      const next = (await api.claim(b.auth))!;
      expect(next.sessionId).toBe(sessionId);
      expect(next.messages.map((m) => m.content[0].text)).toEqual(['continue on B']);
    });

    it('is the work routed to its computer only: not another computer\'s, not unrouted work', async () => {
      const { owner, computer: a } = await api.ownerWithComputer();
      const b = await api.createComputer(owner, 'desktop');
      const forA = await api.pendingWork(owner, 'for A', a.id);
      const forB = await api.pendingWork(owner, 'for B', b.id);
      const unrouted = await api.pendingWork(owner, 'for anyone');

      const work = (await api.claim(a.auth))!;
      expect(work).toMatchObject({ sessionId: forA.sessionId, session: { status: 'running' } });
      expect(work.messages.map((m) => m.id)).toEqual([forA.messageId]);
      expect(await api.claim(a.auth)).toBeNull();
      expect(await api.claim(a.auth, { computerId: a.id })).toBeNull();

      // Naming another computer, even one of the same owner, is 404.
      expectV0Error(await api.claimRaw(a.auth, { computerId: b.id }), 404, 'computer_not_found');
      expectV0Error(await api.claimRaw(a.auth, { computerId: randomUUID() }), 404, 'computer_not_found');

      // The other work is still waiting, each in its own queue.
      expect((await api.getSession(owner, forB.sessionId)).status).toBe('pending');
      expect((await api.getSession(owner, unrouted.sessionId)).status).toBe('pending');
      expect((await api.claim(b.auth))?.sessionId).toBe(forB.sessionId);
      expect((await api.claim(owner.auth))?.sessionId).toBe(unrouted.sessionId);
    });

    it('lets a token answer its own turn (messages, usage, end) but not another computer\'s turn (404 session_not_found)', async () => {
      const { owner, computer: a } = await api.ownerWithComputer();
      const b = await api.createComputer(owner, 'desktop');
      const forA = await api.pendingWork(owner, 'for A', a.id);
      const forB = await api.pendingWork(owner, 'for B', b.id);
      const workA = (await api.claim(a.auth))!;
      const workB = (await api.claim(b.auth))!;
      expect([workA.sessionId, workB.sessionId]).toEqual([forA.sessionId, forB.sessionId]);

      // A's token on B's turn.
      expectV0Error(await api.append(a.auth, forB.sessionId, workB.turnId), 404, 'session_not_found');
      expectV0Error(await api.usage(a.auth, forB.sessionId, workB.turnId), 404, 'session_not_found');
      expectV0Error(await api.endTurn(a.auth, forB.sessionId, workB.turnId), 404, 'session_not_found');
      // Nor by naming its own turn id on B's session.
      expectV0Error(await api.endTurn(a.auth, forB.sessionId, workA.turnId), 404, 'session_not_found');
      expect((await api.getSession(owner, forB.sessionId)).status).toBe('running');

      // A's token on its own turn.
      const appended = await api.append(a.auth, forA.sessionId, workA.turnId, 'answer from A');
      expect(appended.status).toBe(200);
      expect(appended.body.messages).toMatchObject([{ role: 'assistant', content: [{ type: 'text', text: 'answer from A' }], parentId: forA.messageId }]);
      const usage = await api.usage(a.auth, forA.sessionId, workA.turnId);
      expect(usage.status).toBe(200);
      expect(usage.body.session).toMatchObject({ sessionId: forA.sessionId, status: 'running' });
      const ended = await api.endTurn(a.auth, forA.sessionId, workA.turnId);
      expect(ended.status).toBe(200);
      expect(ended.body.session).toMatchObject({ sessionId: forA.sessionId, status: 'idle', messageCount: 2 });

      // B's turn was untouched by A's attempts, and B can end it.
      const endedB = await api.endTurn(b.auth, forB.sessionId, workB.turnId);
      expect(endedB.status).toBe(200);
      expect(endedB.body.session).toMatchObject({ status: 'idle', messageCount: 1 });
    });

    it('does not reach unrouted work, even a turn an API key took', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      const unrouted = await api.pendingWork(owner, 'for anyone');
      expect(await api.claim(computer.auth)).toBeNull();
      const work = (await api.claim(owner.auth))!;
      expect(work.sessionId).toBe(unrouted.sessionId);
      expectV0Error(await api.append(computer.auth, unrouted.sessionId, work.turnId), 404, 'session_not_found');
      expectV0Error(await api.endTurn(computer.auth, unrouted.sessionId, work.turnId), 404, 'session_not_found');
      expect((await api.endTurn(owner.auth, unrouted.sessionId, work.turnId)).status).toBe(200);
    });

    it('of a member\'s computer takes work routed to it from sessions of others', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);
      const membersComputer = await api.createComputer(member);
      expect(membersComputer.ownerId).toBe(member.userId);

      const ownersWork = await api.pendingWork(owner, 'please build', membersComputer.id);
      // The member's own key does not reach the owner's session...
      expect(await api.claim(member.auth, { computerId: membersComputer.id })).toBeNull();
      // ...but the computer's token takes the work routed to the computer.
      const work = (await api.claim(membersComputer.auth))!;
      expect(work).toMatchObject({ sessionId: ownersWork.sessionId, messages: [{ id: ownersWork.messageId }] });
      expect((await api.append(membersComputer.auth, ownersWork.sessionId, work.turnId)).status).toBe(200);
      expect((await api.usage(membersComputer.auth, ownersWork.sessionId, work.turnId)).status).toBe(200);
      const ended = await api.endTurn(membersComputer.auth, ownersWork.sessionId, work.turnId);
      expect(ended.status).toBe(200);
      expect(ended.body.session).toMatchObject({ status: 'idle', messageCount: 2 });
    });
  });

  describe('rotation', () => {
    it('issues a new token; the old one answers 401 at once, the new one works', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      const before = Date.now();
      const res = await api.rotate(owner, computer.id);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['agentToken', 'computerId', 'createdAt']);
      expect(res.body.computerId).toBe(computer.id);
      expect(res.body.agentToken).toMatch(TOKEN_SHAPE);
      expect(res.body.agentToken).not.toBe(computer.agentToken);
      expect(res.body.createdAt).toBeGreaterThanOrEqual(before - 1);
      expect(res.body.createdAt).toBeLessThanOrEqual(Date.now());

      expectV0Error(await api.claimRaw(computer.auth), 401, 'invalid_credentials');
      const fresh = bearer(res.body.agentToken as string);
      expect((await api.claimRaw(fresh)).status).toBe(200);

      const [row] = (await t.app.get(DataSource).query(`SELECT agent_token_hash FROM computers WHERE id = $1`, [computer.id])) as Array<{ agent_token_hash: string }>;
      expect(row.agent_token_hash).toBe(sha256(res.body.agentToken as string));

      // The new token reaches the computer's work.
      const routed = await api.pendingWork(owner, 'after rotation', computer.id);
      expect((await api.claim(fresh))?.sessionId).toBe(routed.sessionId);
    });

    it('members rotate their own computers\' tokens only (another member\'s 404), guests none (403)', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const manager = await createUser(t, Role.Manager, org);
      const member = await createUser(t, Role.Member, org);
      const otherMember = await createUser(t, Role.Member, org);
      const guest = await createUser(t, Role.Guest, org);
      const mine = await api.createComputer(member);
      const theirs = await api.createComputer(otherMember);

      expectV0Error(await api.rotate(member, theirs.id), 404, 'computer_not_found');
      expectV0Error(await api.rotate(guest, mine.id), 403, 'insufficient_role');
      expectV0Error(await api.rotate(owner, randomUUID()), 404, 'computer_not_found');
      expectV0Error(await api.rotate(owner, 'not-a-uuid'), 404, 'computer_not_found');
      // The refused rotations changed nothing.
      expect((await api.claimRaw(theirs.auth)).status).toBe(200);
      expect((await api.claimRaw(mine.auth)).status).toBe(200);

      const own = await api.rotate(member, mine.id);
      expect(own.status).toBe(200);
      expect(own.body.computerId).toBe(mine.id);
      expect((await api.claimRaw(mine.auth)).status).toBe(401);

      // Owners and managers may rotate any computer of the organization.
      const byManager = await api.rotate(manager, theirs.id);
      expect(byManager.status).toBe(200);
      const byOwner = await api.rotate(owner, theirs.id);
      expect(byOwner.status).toBe(200);
      expect((await api.claimRaw(bearer(byManager.body.agentToken as string))).status).toBe(401);
      expect((await api.claimRaw(bearer(byOwner.body.agentToken as string))).status).toBe(200);

      // Another organization's owner cannot.
      const stranger = await createUser(t, Role.Owner);
      expectV0Error(await api.rotate(stranger, mine.id), 404, 'computer_not_found');
    });
  });

  describe('connect', () => {
    it('records the hostname, shown in list, get and update responses', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      const listedBefore = (await http().get('/api/v0/computers').set(owner.auth).expect(200)).body.computers as Body[];
      expect(listedBefore.find((c) => c.id === computer.id)).not.toHaveProperty('hostname');

      const res = await api.connect(computer.auth, { hostname: 'build-01.example.com' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: computer.id, name: 'laptop', providerType: 'byom', status: 'active', hostname: 'build-01.example.com' });
      expect(res.body).not.toHaveProperty('agentToken');

      const listed = (await http().get('/api/v0/computers').set(owner.auth).expect(200)).body.computers as Body[];
      expect(listed.find((c) => c.id === computer.id)).toMatchObject({ hostname: 'build-01.example.com' });
      const got = await http().get(`/api/v0/computers/${computer.id}`).set(owner.auth).expect(200);
      expect(got.body.hostname).toBe('build-01.example.com');
      const patched = await http().patch(`/api/v0/computers/${computer.id}`).set(owner.auth).send({ name: 'renamed' }).expect(200);
      expect(patched.body).toMatchObject({ name: 'renamed', hostname: 'build-01.example.com' });

      // A later connect replaces it.
      const again = await api.connect(computer.auth, { hostname: 'build-02' });
      expect(again.body).toMatchObject({ name: 'renamed', hostname: 'build-02' });
    });

    it('refuses API keys (403 computer_credential_required)', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      expectV0Error(await api.connect(owner.auth, { hostname: 'build-01.example.com' }), 403, 'computer_credential_required');
      const got = await http().get(`/api/v0/computers/${computer.id}`).set(owner.auth).expect(200);
      expect(got.body).not.toHaveProperty('hostname');
    });

    const label = (n: number) => 'a'.repeat(n);
    it.each<[string, object]>([
      ['starting with a hyphen', { hostname: '-bad' }],
      ['ending with a hyphen', { hostname: 'bad-' }],
      ['with a space', { hostname: 'a b' }],
      ['with an empty label', { hostname: 'a..b' }],
      ['with a trailing dot', { hostname: 'host.' }],
      ['with a label of 64 characters', { hostname: `${label(64)}.example` }],
      ['of 254 characters', { hostname: [label(63), label(63), label(63), label(62)].join('.') }],
      ['empty', { hostname: '' }],
      ['not a string', { hostname: 42 }],
      ['missing', {}],
      ['with an extra field', { hostname: 'build-01', os: 'linux' }],
    ])('answers 400 for a hostname %s, recording nothing', async (_, body) => {
      const { owner, computer } = await api.ownerWithComputer();
      const res = await api.connect(computer.auth, body);
      expect(res.status).toBe(400);
      expect(res.body.metadata.code).toEqual(expect.any(String));
      const got = await http().get(`/api/v0/computers/${computer.id}`).set(owner.auth).expect(200);
      expect(got.body).not.toHaveProperty('hostname');
    });

    it('accepts a hostname of 253 characters', async () => {
      const { computer } = await api.ownerWithComputer();
      const hostname = [label(63), label(63), label(63), label(61)].join('.');
      expect(hostname).toHaveLength(253);
      const res = await api.connect(computer.auth, { hostname });
      expect(res.status).toBe(200);
      expect(res.body.hostname).toBe(hostname);
    });
  });

  describe('deleting a computer', () => {
    it('kills its token, keeps its sessions without computerId, and makes its pending work unrouted', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      const attached = await api.createSession(owner, { computerId: computer.id });
      expect((await api.getSession(owner, attached)).computerId).toBe(computer.id);
      const attachedMessage = await api.say(owner, attached, 'work on the attached session');
      const routed = await api.pendingWork(owner, 'routed by message', computer.id);
      // The work waits for the computer, not in the unrouted queue.
      expect(await api.claim(owner.auth)).toBeNull();

      await http().delete(`/api/v0/computers/${computer.id}`).set(owner.auth).expect(204);
      expectV0Error(await api.claimRaw(computer.auth), 401, 'invalid_credentials');
      expectV0Error(await api.connect(computer.auth, { hostname: 'gone' }), 401, 'invalid_credentials');
      await http().get(`/api/v0/computers/${computer.id}`).set(owner.auth).expect(404);

      const after = await api.getSession(owner, attached);
      expect(after.sessionId).toBe(attached);
      expect(after).not.toHaveProperty('computerId');
      expect(after.status).toBe('pending');
      expect((await api.getSession(owner, routed.sessionId)).status).toBe('pending');

      // Both are now unrouted work, claimable by an API key without computerId, oldest first.
      const first = (await api.claim(owner.auth))!;
      expect(first).toMatchObject({ sessionId: attached, messages: [{ id: attachedMessage }] });
      const second = (await api.claim(owner.auth))!;
      expect(second).toMatchObject({ sessionId: routed.sessionId, messages: [{ id: routed.messageId }] });
      expect(await api.claim(owner.auth)).toBeNull();
      // The deleted computer's id is unknown now.
      expectV0Error(await api.claimRaw(owner.auth, { computerId: computer.id }), 404, 'computer_not_found');
      expectV0Error(await http().get(`/api/v0/sessions?computerId=${computer.id}`).set(owner.auth), 404, 'computer_not_found');
    });

    it('of another computer leaves a token alone', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      const other = await api.createComputer(owner, 'desktop');
      await http().delete(`/api/v0/computers/${other.id}`).set(owner.auth).expect(204);
      expect((await api.claimRaw(computer.auth)).status).toBe(200);
    });
  });

  describe('sessions\' computerId', () => {
    it('filters the session list by a real computer', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      const attached = await api.createSession(owner, { computerId: computer.id });
      const loose = await api.createSession(owner);
      const res = await http().get(`/api/v0/sessions?computerId=${computer.id}`).set(owner.auth);
      expect(res.status).toBe(200);
      const ids = (res.body.sessions as Body[]).map((s) => s.sessionId);
      expect(ids).toEqual([attached]);
      expect(ids).not.toContain(loose);
      expect((await http().get(`/api/v0/sessions/${attached}?computerId=${computer.id}`).set(owner.auth)).status).toBe(200);
    });

    it('is 404 computer_not_found for a member naming another member\'s computer, which owners may use', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);
      const otherMember = await createUser(t, Role.Member, org);
      const theirs = await api.createComputer(otherMember);
      const mine = await api.createComputer(member);

      expectV0Error(await http().get(`/api/v0/sessions?computerId=${theirs.id}`).set(member.auth), 404, 'computer_not_found');
      expectV0Error(await http().post('/api/v0/sessions').set(member.auth).send({ computerId: theirs.id }), 404, 'computer_not_found');
      const session = await api.createSession(member);
      expectV0Error(
        await http().post(`/api/v0/sessions/${session}/messages`).set(member.auth).send({ text: 'hi', computerId: theirs.id }),
        404,
        'computer_not_found',
      );
      expectV0Error(await api.claimRaw(member.auth, { computerId: theirs.id }), 404, 'computer_not_found');

      // Their own computer is fine, and owners see every computer of the organization.
      expect((await http().get(`/api/v0/sessions?computerId=${mine.id}`).set(member.auth)).status).toBe(200);
      expect((await http().post('/api/v0/sessions').set(member.auth).send({ computerId: mine.id })).status).toBe(201);
      expect((await http().get(`/api/v0/sessions?computerId=${theirs.id}`).set(owner.auth)).status).toBe(200);
      expect((await http().post('/api/v0/sessions').set(owner.auth).send({ computerId: theirs.id })).status).toBe(201);
    });

    it('is 404 for a computer of another organization', async () => {
      const { computer } = await api.ownerWithComputer();
      const stranger = await createUser(t, Role.Owner);
      expectV0Error(await http().post('/api/v0/sessions').set(stranger.auth).send({ computerId: computer.id }), 404, 'computer_not_found');
      expectV0Error(await http().get(`/api/v0/sessions?computerId=${computer.id}`).set(stranger.auth), 404, 'computer_not_found');
      const session = await api.createSession(stranger);
      expectV0Error(
        await http().post(`/api/v0/sessions/${session}/messages`).set(stranger.auth).send({ text: 'hi', computerId: computer.id }),
        404,
        'computer_not_found',
      );
      expectV0Error(await api.claimRaw(stranger.auth, { computerId: computer.id }), 404, 'computer_not_found');
    });
  });
});

describe('Computer agents, with the credential cache on', () => {
  let t: TestApp;
  const api = helpers(() => t);

  beforeAll(async () => {
    t = await startTestApp({ PROVISIONING_CONCURRENCY: '0', AUTH_CACHE_MS: '60000' });
  });

  afterAll(() => t.close());

  it('a rotated token answers 401 at once on this instance, though it was cached', async () => {
    const { owner, computer } = await api.ownerWithComputer();
    expect((await api.claimRaw(computer.auth)).status).toBe(200);
    const rotated = await api.rotate(owner, computer.id);
    expect(rotated.status).toBe(200);
    expectV0Error(await api.claimRaw(computer.auth), 401, 'invalid_credentials');
    expect((await api.claimRaw(bearer(rotated.body.agentToken as string))).status).toBe(200);
  });

  it('a deleted computer\'s token answers 401 at once on this instance, though it was cached', async () => {
    const { owner, computer } = await api.ownerWithComputer();
    expect((await api.claimRaw(computer.auth)).status).toBe(200);
    await t.http().delete(`/api/v0/computers/${computer.id}`).set(owner.auth).expect(204);
    expectV0Error(await api.claimRaw(computer.auth), 401, 'invalid_credentials');
  });
});

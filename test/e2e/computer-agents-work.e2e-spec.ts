import { randomUUID } from 'node:crypto';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser } from '../utils/factories';
import { expectV0Error } from '../utils/v0-errors';
import { TestApp } from '../utils/test-app';
import { Body, computerAgentsFixture } from '../utils/fixtures/computer-agents';

/** What a computer's agent reaches over real HTTP: the work of its computer's sessions, connecting, and sessions' computerId. */

describe('Computer agents', () => {
  const fixture = computerAgentsFixture();
  const { api, http } = fixture;
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

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

    it("is the work routed to its computer only: not another computer's, not unrouted work", async () => {
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

    it("lets a token answer its own turn (messages, usage, end) but not another computer's turn (404 session_not_found)", async () => {
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

    it("of a member's computer takes work routed to it from sessions of others", async () => {
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

  describe("sessions' computerId", () => {
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

    it("is 404 computer_not_found for a member naming another member's computer, which owners may use", async () => {
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

import { randomUUID } from 'node:crypto';
import { Role } from '../../src/modules/auth';
import { LongPollSlots } from '../../src/modules/agent-channel/long-poll-slots';
import { WorkClaims } from '../../src/modules/agent-channel/work-claims.service';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { serverUrl } from '../utils/test-database';
import { openClaim as openRawClaim } from '../utils/raw-claims';
import { TestApp } from '../utils/test-app';
import { ENDED_EARLY_MS, LONG_WAIT_MS, until } from '../utils/polling';
import { agentChannelFixture, expectInvalid, expectV0Error, SessionView, UUID, Work } from '../utils/fixtures/agent-channel';

/**
 * The agent channel's claims over real HTTP: the session status cycle they drive, which work an agent
 * is given and when, and claims whose agent went away. Every test works in an organization of its own.
 */

describe('Agent channel', () => {
  const fixture = agentChannelFixture();
  const { api } = fixture;
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

  /** Watches the server's claims: how many arrived, which wait, what each answered. */
  function watchClaims() {
    const spy = jest.spyOn(t.app.get(WorkClaims), 'claim');
    const slots = jest.spyOn(t.app.get(LongPollSlots), 'acquire');
    return {
      count: () => spy.mock.calls.length,
      /** Claims that found nothing and wait: past their first look, in the long poll. */
      waiting: () =>
        until(
          () => slots.mock.calls.length,
          (n) => n === spy.mock.calls.length && n > 0,
          'the claims to wait',
          20_000,
        ),
      answers: () => Promise.all(spy.mock.results.map((r) => r.value as Promise<{ body: { work: Work | null } }>)),
      restore: () => {
        spy.mockRestore();
        slots.mockRestore();
      },
    };
  }

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
        const [added, ended] = await Promise.all([api.addMessage(owner, sessionId, `racing ${round}`), api.endTurn(owner, sessionId, { turnId: work.turnId })]);
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
      const claims = watchClaims();
      const waiting = api.claimRaw(owner, { waitMs: LONG_WAIT_MS }).then((res) => ({ res, at: Date.now() }));
      await claims.waiting().finally(claims.restore);
      const messageId = await api.say(owner, session.sessionId, 'wake up', 'pending');
      const { res, at } = await waiting;
      expect(res.status).toBe(200);
      expect(res.body.work).toMatchObject({ sessionId: session.sessionId, messages: [{ id: messageId }] });
      // Woken by the message itself, not found when the wait ran out or by a periodic re-check of the database.
      expect(at - started).toBeLessThan(ENDED_EARLY_MS);
    });

    it('a waiting claim is woken when a turn ends with user messages left to answer', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      const during = await api.say(owner, sessionId, 'one more thing', 'running');
      const started = Date.now();
      const claims = watchClaims();
      const waiting = api.claimRaw(owner, { waitMs: LONG_WAIT_MS }).then((res) => ({ res, at: Date.now() }));
      await claims.waiting().finally(claims.restore);
      expect((await api.endTurn(owner, sessionId, { turnId })).body.session.status).toBe('pending');
      const { res, at } = await waiting;
      expect(res.body.work).toMatchObject({ sessionId, messages: [{ id: during }] });
      expect(at - started).toBeLessThan(ENDED_EARLY_MS);
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
      // Not held past its waitMs until the next periodic re-check (30 s).
      expect(took).toBeLessThan(ENDED_EARLY_MS);
    });

    it('a waiting claim is not given another organization’s work', async () => {
      const mine = await createUser(t, Role.Owner, await createOrganization(t));
      const theirs = await api.pendingSession();
      const started = Date.now();
      const claims = watchClaims();
      const waiting = api.claimRaw(mine, { waitMs: 2_000 }).then((res) => res);
      await claims.waiting().finally(claims.restore);
      await api.say(theirs.owner, (await api.createSession(theirs.owner)).sessionId, 'not for you');
      const res = await waiting;
      expect(res.body).toEqual({ work: null });
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_990);
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

  describe('which sessions still exist', () => {
    it("answers only the ids of sessions the caller may read: never another organization's, a deleted one, or one restrictMemberVisibility hides", async () => {
      const org = await createOrganization(t, { messageHistory: true });
      const [owner, member, other] = [await createUser(t, Role.Owner, org), await createUser(t, Role.Member, org), await createUser(t, Role.Member, org)];
      const outsider = await createUser(t, Role.Owner, await createOrganization(t));
      const mine = (await api.createSession(member)).sessionId;
      const theirs = (await api.createSession(other)).sessionId;
      const deleted = (await api.createSession(member)).sessionId;
      const foreign = (await api.createSession(outsider)).sessionId;
      await t.http().delete(`/api/v0/sessions/${deleted}`).set(member.auth).expect(204);
      const ask = (user: TestUser, sessionIds: unknown) => t.http().post('/api/v0/agent/sessions/existing').set(user.auth).send({ sessionIds });
      const ids = [foreign, deleted, theirs, randomUUID(), mine.toUpperCase()];

      expect((await ask(member, ids)).body).toEqual({ existing: [theirs, mine] });
      await t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { restrictMemberVisibility: true } })
        .expect(200);
      expect((await ask(member, ids)).body).toEqual({ existing: [mine] });
      expect((await ask(outsider, ids)).body).toEqual({ existing: [foreign] });
      expectInvalid(await ask(member, ['not-a-uuid']), 'sessionIds[0]');
      expectInvalid(
        await ask(
          member,
          Array.from({ length: 101 }, () => randomUUID()),
        ),
        'sessionIds',
      );
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

    it('a claim whose agent went away while waiting takes no work: the message stays pending for the next live agent', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const { sessionId } = await api.createSession(owner);
      const claims = watchClaims();
      try {
        const dead = openClaim(owner, { waitMs: LONG_WAIT_MS });
        await claims.waiting();
        expect(claims.count()).toBe(1); // the server is in the long poll
        dead.cut();
        expect(await dead.outcome).toBe('cut');

        const messageId = await api.say(owner, sessionId, 'anyone there?', 'pending');
        // Once the abandoned claim has answered, nothing else could take the message.
        const [abandoned] = await claims.answers();
        expect(abandoned.body).toEqual({ work: null });
        // Without the check, the long poll woken by the message would have taken it: running under a turn no one does.
        expect(await api.getSession(owner, sessionId)).toMatchObject({ status: 'pending', messageCount: 1 });

        const work = (await api.claim(owner))!;
        expect(work).toMatchObject({
          sessionId,
          session: { status: 'running' },
          messages: [{ id: messageId, role: 'user', content: [{ type: 'text', text: 'anyone there?' }] }],
        });
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
        const dead = openClaim(owner, { waitMs: LONG_WAIT_MS });
        const live = api.claimRaw(owner, { waitMs: LONG_WAIT_MS }).then((res) => ({ res, at: Date.now() }));
        await claims.waiting();
        expect(claims.count()).toBe(2);
        dead.cut();
        expect(await dead.outcome).toBe('cut');
        const addedAt = Date.now();
        const messageId = await api.say(owner, sessionId, 'who takes this?', 'pending');
        const { res, at } = await live;
        expect(res.status).toBe(200);
        expect(res.body.work).toMatchObject({ sessionId, messages: [{ id: messageId }] });
        // At once: not when its own wait or the gone agent's lease would have run out.
        expect(at - addedAt).toBeLessThan(ENDED_EARLY_MS);
        const answers = await claims.answers();
        expect(answers.map((a) => a.body.work?.turnId ?? null).sort()).toEqual([null, res.body.work.turnId].sort());
        expect((await api.getSession(owner, sessionId)).status).toBe('running');
        expect((await api.endTurn(owner, sessionId, { turnId: res.body.work.turnId })).body.session.status).toBe('idle');
      } finally {
        claims.restore();
      }
    });

    it('an agent that went away before any work arrived ends its long poll at once, not at waitMs', async () => {
      const owner = await createUser(t, Role.Owner, await createOrganization(t));
      const claims = watchClaims();
      try {
        const dead = openClaim(owner, { waitMs: LONG_WAIT_MS });
        await claims.waiting();
        expect(claims.count()).toBe(1);
        const cutAt = Date.now();
        dead.cut();
        const [answer] = await claims.answers();
        expect(answer.body).toEqual({ work: null });
        expect(Date.now() - cutAt).toBeLessThan(ENDED_EARLY_MS);
      } finally {
        claims.restore();
      }
    });
  });
});

import { Logger } from '@nestjs/common';
import { Role } from '../../src/modules/auth';
import { Sql } from '../../src/platform/database/sql';
import { createOrganization, createUser } from '../utils/factories';
import { ENDED_EARLY_MS, LONG_WAIT_MS, sleep, until } from '../utils/polling';
import { pollsWaiting } from '../utils/long-polls-waiting';
import { answered, ClaimAnswer, openClaim } from '../utils/raw-claims';
import { startTestApp, TestApp } from '../utils/test-app';
import { Answer, countCheckouts, helpers, poolOf, QUIET, quiet, settledAmong } from '../utils/fixtures/long-polls';

/**
 * Long polls (`POST /api/v0/agent/claims` with `waitMs`), from the side of a fleet of agents: a
 * waiting claim is woken at once by work, holds no database connection while it waits, and the
 * number waiting at once is capped per computer and per organization.
 *
 * "At once" is told apart from "at the deadline" without timing anything: a poll that must be woken waits
 * LONG_WAIT_MS and must answer within ENDED_EARLY_MS, half of it. A poll that must answer at its own deadline keeps a
 * short waitMs; one no test needs to answer waits long and is cut.
 */

describe('Long polls', () => {
  let t: TestApp;
  const api = helpers(() => t);

  beforeAll(async () => {
    t = await startTestApp({ LONG_POLLS_PER_COMPUTER: '2', LONG_POLLS_PER_ORGANIZATION: '3', ...QUIET });
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('waking', () => {
    it('a waiting claim gets a user message’s work as soon as it is added', async () => {
      const owner = await createUser(t, Role.Owner);
      const sessionId = await api.session(owner);
      const claim = openClaim(t, owner.auth, { waitMs: LONG_WAIT_MS });
      await pollsWaiting(t, owner.organizationId, 1);
      const addedAt = await api.say(owner, sessionId, 'wake up');
      const res = await answered(claim);
      expect(res.status).toBe(200);
      expect(res.body.work).toMatchObject({ sessionId });
      expect(res.at - addedAt).toBeLessThan(ENDED_EARLY_MS);
    });

    it('a computer’s poll is woken by work routed to it, not by work routed to another computer', async () => {
      const owner = await createUser(t, Role.Owner);
      const [a, b] = [await api.computer(owner), await api.computer(owner)];
      const [forA, forB] = [await api.session(owner), await api.session(owner)];
      const pollA = openClaim(t, a.auth, { waitMs: LONG_WAIT_MS });
      const pollB = openClaim(t, b.auth, { waitMs: 1_000 });
      await pollsWaiting(t, owner.organizationId, 2);
      const addedAt = await api.say(owner, forA, 'for a', a.id);
      const resA = await answered(pollA);
      expect(resA.body.work).toMatchObject({ sessionId: forA });
      expect(resA.at - addedAt).toBeLessThan(ENDED_EARLY_MS);
      // b waits on, to its own deadline, and then has nothing: a's work is not b's.
      expect((await answered(pollB)).body).toEqual({ work: null });
      const sentB = await api.say(owner, forB, 'for b', b.id);
      const resB = await answered(openClaim(t, b.auth, { waitMs: LONG_WAIT_MS }));
      expect(resB.body.work).toMatchObject({ sessionId: forB });
      expect(resB.at - sentB).toBeLessThan(ENDED_EARLY_MS);
    });

    it('two pieces of work arriving together go to two of the waiting polls at once', async () => {
      const owner = await createUser(t, Role.Owner);
      const [one, two] = [await api.session(owner), await api.session(owner)];
      // The poll left without work would answer only at its deadline: the woken two answer within half of it.
      const polls = [0, 1, 2].map(() => openClaim(t, owner.auth, { waitMs: LONG_WAIT_MS }));
      await pollsWaiting(t, owner.organizationId, 3);
      const answers: ClaimAnswer[] = [];
      for (const poll of polls) void poll.answer.then((a) => a !== 'cut' && answers.push(a));
      const started = Date.now();
      await Promise.all([api.say(owner, one, 'one'), api.say(owner, two, 'two')]);
      await until(
        () => answers.length,
        (n) => n >= 2,
        'two polls to answer',
        LONG_WAIT_MS,
      );
      const got = answers.filter((a) => a.body.work).map((a) => a.body.work!.sessionId);
      expect(got.sort()).toEqual([one, two].sort());
      for (const a of answers.filter((a) => a.body.work)) expect(a.at - started).toBeLessThan(ENDED_EARLY_MS);
      // The third has nothing to take: it waits on, and no one needs its answer.
      expect(await settledAmong(polls)).toBe(2);
      for (const poll of polls) poll.cut();
    });
  });

  describe('waiting costs the database nothing', () => {
    it('while polls wait, no connection is checked out and none is asked for; other requests are served at once', async () => {
      const owner = await createUser(t, Role.Owner);
      const computers = [await api.computer(owner)];
      const sessionId = await api.session(owner);
      const polls = [openClaim(t, computers[0].auth, { waitMs: LONG_WAIT_MS }), openClaim(t, owner.auth, { waitMs: LONG_WAIT_MS })];
      const pool = poolOf(t);
      await pollsWaiting(t, owner.organizationId, 2);
      // What the requests before set going after their answers (their events' listeners) is done first.
      await quiet(t);
      const checkouts = countCheckouts(t);
      for (let i = 0; i < 4; i++) {
        await sleep(500);
        expect({ checkedOut: pool.totalCount - pool.idleCount, waitingForOne: pool.waitingCount }).toEqual({ checkedOut: 0, waitingForOne: 0 });
      }
      checkouts.stop();
      // Two seconds of two waiting polls: not a single statement (a re-check a second would be four looks).
      expect(checkouts.count()).toBe(0);
      expect(await settledAmong(polls)).toBe(0);
      // On PGlite the pool has one connection: a poll holding it would block this read until the poll ended. Served at
      // once: while both polls still wait.
      expect((await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth)).status).toBe(200);
      expect(await settledAmong(polls)).toBe(0);
      for (const poll of polls) poll.cut();
    });
  });

  describe('caps (LONG_POLLS_PER_COMPUTER=2, LONG_POLLS_PER_ORGANIZATION=3)', () => {
    function expectTooMany(res: Answer, limit: string, max: number) {
      expect({ status: res.status, body: res.body }).toMatchObject({
        status: 429,
        body: { status: 429, title: expect.any(String), detail: expect.stringContaining(limit), metadata: { code: 'too_many_long_polls', limit, max } },
      });
      expect(res.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
    }

    it('a third waiting poll of one computer is 429 with Retry-After; claims without waitMs still answer; a cut poll frees its slot at once', async () => {
      const owner = await createUser(t, Role.Owner);
      const computer = await api.computer(owner);
      const polls = [openClaim(t, computer.auth, { waitMs: LONG_WAIT_MS }), openClaim(t, computer.auth, { waitMs: LONG_WAIT_MS })];
      await pollsWaiting(t, owner.organizationId, 2);
      const started = Date.now();
      const third = await answered(openClaim(t, computer.auth, { waitMs: LONG_WAIT_MS }));
      expectTooMany(third, 'LONG_POLLS_PER_COMPUTER', 2);
      expect(third.body.metadata).toMatchObject({ computerId: computer.id });
      // Refused at once, not after waiting its time.
      expect(third.at - started).toBeLessThan(ENDED_EARLY_MS);
      // Not waiting, not capped.
      const immediate = await t.http().post('/api/v0/agent/claims').set(computer.auth).send({});
      expect({ status: immediate.status, body: immediate.body }).toEqual({ status: 200, body: { work: null } });

      // Freed at once: not when the cut poll's wait would have run out.
      const cutAt = Date.now();
      polls[0].cut();
      await pollsWaiting(t, owner.organizationId, 1);
      expect(Date.now() - cutAt).toBeLessThan(ENDED_EARLY_MS);
      const replacement = openClaim(t, computer.auth, { waitMs: 400 });
      const res = await answered(replacement);
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { work: null } });
      expect(await settledAmong([polls[1]])).toBe(0);
      polls[1].cut();
    });

    it('over the cap, a poll for work that polls already wait for is refused before it reads anything (a surge cannot queue behind the database)', async () => {
      const owner = await createUser(t, Role.Owner);
      const computer = await api.computer(owner);
      const polls = [openClaim(t, computer.auth, { waitMs: LONG_WAIT_MS }), openClaim(t, computer.auth, { waitMs: LONG_WAIT_MS })];
      await pollsWaiting(t, owner.organizationId, 2);
      await quiet(t);
      // Every statement the app sends meanwhile, by name (still sent: only seen).
      const sql = t.app.get(Sql);
      const send = sql.query.bind(sql);
      const sent: string[] = [];
      const seen = jest.spyOn(sql, 'query').mockImplementation((name, text, values) => (sent.push(name), send(name, text, values)));
      const checkouts = countCheckouts(t);
      const surge = await Promise.all(Array.from({ length: 20 }, () => answered(openClaim(t, computer.auth, { waitMs: LONG_WAIT_MS }))));
      checkouts.stop();
      seen.mockRestore();
      for (const res of surge) expectTooMany(res, 'LONG_POLLS_PER_COMPUTER', 2);
      // Twenty refusals and not one statement or connection of the claim's own (no look for work, no presence, no computer
      // read): only the credential's, as AUTH_CACHE_MS is 0 here, one connection each.
      expect(sent.length).toBeGreaterThan(0);
      expect(sent.filter((name) => !['computers.byToken', 'auth.caller'].includes(name))).toEqual([]);
      // Connections taken besides those statements: none of the surge's own (that would be 20 or more), but the app may take
      // one meanwhile for work of its own (41 for 40 statements, seen in CI and when this test runs alone).
      expect(checkouts.count() - sent.length).toBeLessThanOrEqual(2);
      expect(await settledAmong(polls)).toBe(0);
      for (const poll of polls) poll.cut();
    });

    it('a poll that finds work at once is served even when the organization’s polls are all taken', async () => {
      const owner = await createUser(t, Role.Owner);
      const computer = await api.computer(owner);
      const sessionId = await api.session(owner);
      // Three polls for the unrouted work fill the organization's slots; work routed to the computer does not wake them.
      const polls = [0, 1, 2].map(() => openClaim(t, owner.auth, { waitMs: LONG_WAIT_MS }));
      await pollsWaiting(t, owner.organizationId, 3);
      await api.say(owner, sessionId, 'for the computer', computer.id);
      const res = await answered(openClaim(t, computer.auth, { waitMs: 10_000 }));
      expect(res.status).toBe(200);
      expect(res.body.work).toMatchObject({ sessionId });
      // With nothing left to take it would have to wait: refused.
      expectTooMany(await answered(openClaim(t, computer.auth, { waitMs: 10_000 })), 'LONG_POLLS_PER_ORGANIZATION', 3);
      expect(await settledAmong(polls)).toBe(0);
      for (const poll of polls) poll.cut();
    });

    it('the organization’s fourth waiting poll is 429, whatever the credential; another organization is not affected', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);
      const computer = await api.computer(owner);
      const polls = [
        openClaim(t, owner.auth, { waitMs: LONG_WAIT_MS }),
        openClaim(t, member.auth, { waitMs: LONG_WAIT_MS }),
        openClaim(t, computer.auth, { waitMs: LONG_WAIT_MS }),
      ];
      await pollsWaiting(t, org.id, 3);
      expectTooMany(await answered(openClaim(t, owner.auth, { waitMs: 10_000 })), 'LONG_POLLS_PER_ORGANIZATION', 3);
      expectTooMany(await answered(openClaim(t, computer.auth, { waitMs: 10_000 })), 'LONG_POLLS_PER_ORGANIZATION', 3);
      const elsewhere = await createUser(t, Role.Owner);
      expect((await answered(openClaim(t, elsewhere.auth, { waitMs: 300 }))).body).toEqual({ work: null });

      polls[1].cut();
      await pollsWaiting(t, org.id, 2);
      expect((await answered(openClaim(t, owner.auth, { waitMs: 300 }))).body).toEqual({ work: null });
      for (const poll of polls) poll.cut();
    });

    it('refused polls are logged as quota.exceeded once a minute per computer, not once per refusal', async () => {
      const owner = await createUser(t, Role.Owner);
      const computer = await api.computer(owner);
      const polls = [openClaim(t, computer.auth, { waitMs: LONG_WAIT_MS }), openClaim(t, computer.auth, { waitMs: LONG_WAIT_MS })];
      await pollsWaiting(t, owner.organizationId, 2);
      const log = jest.spyOn(Logger.prototype, 'log');
      try {
        for (let i = 0; i < 3; i++) expect((await answered(openClaim(t, computer.auth, { waitMs: 10_000 }))).status).toBe(429);
        const quota = log.mock.calls.map(([entry]) => entry as Record<string, unknown>).filter((entry) => entry?.security === 'quota.exceeded');
        expect(quota).toEqual([
          expect.objectContaining({
            organizationId: owner.organizationId,
            credentialId: `computer:${computer.id}`,
            quota: 'LONG_POLLS_PER_COMPUTER',
            limit: 2,
            computerId: computer.id,
          }),
        ]);
      } finally {
        log.mockRestore();
        for (const poll of polls) poll.cut();
      }
    });
  });
});

import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { EventLog } from '../../src/platform/events';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { Body, ENDED_EARLY_MS, LONG_WAIT_MS, sleep, until } from '../utils/polling';
import { pollsWaiting } from '../utils/long-polls-waiting';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';
import { expectStatus, expectV0Error } from '../utils/v0-errors';

/**
 * Interrupting a turn and approving tool calls, at the level of the HTTP channel: a user's routes
 * (interrupt, list, decide) and the agent's (heartbeat, ask, wait), with an agent played by the
 * test. The real agent process is in agent-process-*.e2e-spec.ts.
 */
describe('Turn control over the channel', () => {
  let t: TestApp;

  beforeAll(async () => {
    // A grace of 3 s: time for a test playing the agent to end an interrupted turn itself, however busy the machine (at
    // 800 ms, a loaded one let it lapse first), and short for the one test that waits for it to run out.
    t = await startTestApp({ AGENT_INTERRUPT_GRACE_MS: '3000', CONTROLS_CACHE_MS: '0' });
  });
  afterAll(() => t.close());

  const post = (user: TestUser, path: string, body?: object) => {
    const req = t.http().post(path).set(user.auth);
    return body === undefined ? req : req.send(body);
  };
  const session = async (user: TestUser, sessionId: string): Promise<Body> =>
    (await t.http().get(`/api/v0/sessions/${sessionId}`).set(user.auth).expect(200)).body as Body;
  const eventsOf = async (user: TestUser, sessionId: string) =>
    (await t.app.get(EventLog).read(user.organizationId, { after: 0, limit: 1000 })).filter((e) => e.sessionId === sessionId);

  /** An organization whose owner has a session with a turn running under an agent (the owner's API key claims). */
  async function runningTurn(settings: object = {}) {
    const owner = await createUser(t, Role.Owner, await createOrganization(t));
    const created = await post(owner, '/api/v0/sessions', { sessionSettings: settings }).expect(201);
    const sessionId = created.body.sessionId as string;
    await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'deploy it' }).expect(200);
    const claim = await post(owner, '/api/v0/agent/claims', {}).expect(200);
    expect(claim.body.work.sessionId).toBe(sessionId);
    return { owner, sessionId, turnId: claim.body.work.turnId as string };
  }

  describe('interrupt', () => {
    it('marks the turn, tells the agent at its heartbeat, stops renewing its lease, and the end of the turn makes the session idle', async () => {
      const { owner, sessionId, turnId } = await runningTurn();
      const before = await post(owner, `/api/v0/agent/sessions/${sessionId}/heartbeat`, { turnId }).expect(200);
      expect(before.body).toEqual({ leaseExpiresAt: expect.any(Number), interrupted: false });

      const res = await post(owner, `/api/v0/sessions/${sessionId}/interrupt`).expect(200);
      expect(res.body).toMatchObject({ sessionId, status: 'running', interruptedAt: expect.any(Number) });

      const beat = await post(owner, `/api/v0/agent/sessions/${sessionId}/heartbeat`, { turnId }).expect(200);
      expect(beat.body.interrupted).toBe(true);
      expect(beat.body.leaseExpiresAt).toBeLessThanOrEqual(res.body.interruptedAt + t.config.AGENT_INTERRUPT_GRACE_MS);
      // The agent writes what it has, then ends: idle, though a user message arrived meanwhile.
      await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'and also this' }).expect(200);
      await post(owner, `/api/v0/agent/sessions/${sessionId}/messages`, {
        turnId,
        messages: [{ role: 'assistant', content: [{ type: 'text', text: 'Stopped.' }] }],
      }).expect(200);
      const ended = await post(owner, `/api/v0/agent/sessions/${sessionId}/end-turn`, { turnId }).expect(200);
      expect(ended.body.session.status).toBe('idle');
      expect(ended.body.session.interruptedAt).toBeUndefined();

      const events = await eventsOf(owner, sessionId);
      const interrupted = events.find((e) => e.type === 'turn.interrupted')!;
      expect(interrupted.data).toEqual({ sessionId, turnId });
      expect(interrupted.actor).toMatchObject({ kind: 'user', userId: owner.userId });
      expect(events.filter((e) => e.type === 'session.status_changed').map((e) => e.data)).toContainEqual({ sessionId, from: 'running', to: 'idle' });

      // The message that arrived during the interrupted turn goes with the next one.
      await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'now go on' }).expect(200);
      const next = await post(owner, '/api/v0/agent/claims', {}).expect(200);
      expect(next.body.work.messages.map((m: Body) => m.content[0].text)).toEqual(['and also this', 'now go on']);
    });

    it('a second interrupt answers the same and raises nothing; a session with no running turn is 409', async () => {
      const { owner, sessionId, turnId } = await runningTurn();
      const first = await post(owner, `/api/v0/sessions/${sessionId}/interrupt`).expect(200);
      const second = await post(owner, `/api/v0/sessions/${sessionId}/interrupt`).expect(200);
      expect(second.body.interruptedAt).toBe(first.body.interruptedAt);
      expect((await eventsOf(owner, sessionId)).filter((e) => e.type === 'turn.interrupted')).toHaveLength(1);

      await post(owner, `/api/v0/agent/sessions/${sessionId}/end-turn`, { turnId }).expect(200);
      const idle = await post(owner, `/api/v0/sessions/${sessionId}/interrupt`);
      expectV0Error(idle, 409, 'no_running_turn');
      expect(idle.body.metadata.sessionStatus).toBe('idle');
    });

    it('an agent that never ends the interrupted turn has it ended after the grace: idle, by the system', async () => {
      const { owner, sessionId, turnId } = await runningTurn();
      await post(owner, `/api/v0/sessions/${sessionId}/interrupt`).expect(200);
      // Heartbeats go on, but no longer keep the turn alive.
      const beating = setInterval(() => void post(owner, `/api/v0/agent/sessions/${sessionId}/heartbeat`, { turnId }).then(() => undefined), 100);
      try {
        // Without the grace the heartbeats would keep it running for good.
        await until(
          () => session(owner, sessionId),
          (s) => s.status === 'idle',
          'the lapsed turn to end',
          LONG_WAIT_MS,
        );
      } finally {
        clearInterval(beating);
      }
      const late = await post(owner, `/api/v0/agent/sessions/${sessionId}/heartbeat`, { turnId });
      expectV0Error(late, 409, 'turn_not_active');
      const ended = (await eventsOf(owner, sessionId)).filter((e) => e.type === 'session.status_changed').pop()!;
      expect(ended).toMatchObject({ actor: { kind: 'system' }, data: { from: 'running', to: 'idle' } });
      // Another agent asking for work does not restart it.
      expect((await post(owner, '/api/v0/agent/claims', {}).expect(200)).body.work).toBeNull();
    });

    // On PGlite a held row holds the one connection, and the sweep waits for it rather than skipping it.
    (serverUrl() ? it : it.skip)('a lapsed turn whose row is held when its grace runs out still ends then, not a sweep period later', async () => {
      const { owner, sessionId } = await runningTurn();
      const interrupted = await post(owner, `/api/v0/sessions/${sessionId}/interrupt`).expect(200);
      // As an agent's heartbeat under load can: the session's row held across the moment the sweep comes for it.
      const holder = t.app.get(DataSource).createQueryRunner();
      await holder.connect();
      await holder.startTransaction();
      try {
        await holder.query('SELECT id FROM sessions WHERE id = $1 FOR UPDATE', [sessionId]);
        const lapsesAt = Number(interrupted.body.interruptedAt) + 3_000;
        // Past the grace and the sweep's margin, the sweep has come and found the row held.
        await until(
          () => Date.now(),
          (now) => now > lapsesAt + 500,
          'the grace to run out',
          LONG_WAIT_MS,
        );
        expect((await session(owner, sessionId)).status).toBe('running');
      } finally {
        await holder.commitTransaction();
        await holder.release();
      }
      // Ended within moments of the row's release: TURN_SWEEP_MS is a minute here.
      await until(
        () => session(owner, sessionId),
        (s) => s.status === 'idle',
        'the held turn to end',
        ENDED_EARLY_MS,
      );
    });

    it('only someone who may write to the session may interrupt: another member 403, a guest 403, another organization 404', async () => {
      const { owner, sessionId } = await runningTurn();
      const org = { id: owner.organizationId, slug: owner.organizationSlug };
      const member = await createUser(t, Role.Member, org);
      const guest = await createUser(t, Role.Guest, org);
      const stranger = await createUser(t, Role.Owner);
      expectV0Error(await post(member, `/api/v0/sessions/${sessionId}/interrupt`), 403, 'read_only_role');
      expectV0Error(await post(guest, `/api/v0/sessions/${sessionId}/interrupt`), 403, 'insufficient_role');
      expectV0Error(await post(stranger, `/api/v0/sessions/${sessionId}/interrupt`), 404, 'session_not_found');
      expectV0Error(await post(owner, `/api/v0/sessions/not-a-uuid/interrupt`), 404, 'session_not_found');
      expect((await session(owner, sessionId)).interruptedAt).toBeUndefined();
      expect((await eventsOf(owner, sessionId)).some((e) => e.type === 'turn.interrupted')).toBe(false);
    });
  });

  describe('tool approval', () => {
    const ask = (user: TestUser, sessionId: string, turnId: string, extra: object = {}) =>
      post(user, `/api/v0/agent/sessions/${sessionId}/tool-approvals`, {
        turnId,
        toolName: 'Execute',
        toolCallId: 'call_1',
        summary: 'git push origin main',
        input: { command: 'git push origin main' },
        ...extra,
      });
    const wait = (user: TestUser, sessionId: string, approvalId: string, turnId: string, waitMs = 0) =>
      t.http().get(`/api/v0/agent/sessions/${sessionId}/tool-approvals/${approvalId}?turnId=${turnId}&waitMs=${waitMs}`).set(user.auth);

    it('the agent asks, the session shows it waits, a long poll wakes at the decision, and events say who asked and who allowed', async () => {
      const { owner, sessionId, turnId } = await runningTurn();
      const asked = await ask(owner, sessionId, turnId).expect(201);
      const approval = asked.body.toolApproval as Body;
      expect(approval).toMatchObject({ sessionId, turnId, toolName: 'Execute', toolCallId: 'call_1', summary: 'git push origin main', status: 'pending' });
      expect(approval.expiresAt - approval.requestedAt).toBe(600_000);
      expect((await session(owner, sessionId)).pendingToolApprovals).toBe(1);
      const listed = await t.http().get(`/api/v0/sessions/${sessionId}/tool-approvals`).set(owner.auth).expect(200);
      expect(listed.body.toolApprovals.map((a: Body) => a.approvalId)).toEqual([approval.approvalId]);

      const started = Date.now();
      const polling = wait(owner, sessionId, approval.approvalId, turnId, LONG_WAIT_MS).then((res) => res);
      await pollsWaiting(t, owner.organizationId, 1);
      const decided = await post(owner, `/api/v0/sessions/${sessionId}/tool-approvals/${approval.approvalId}`, {
        decision: 'allow',
        message: 'go ahead',
      }).expect(200);
      expect(decided.body.toolApproval).toMatchObject({ status: 'allowed', message: 'go ahead', resolvedBy: { userId: owner.userId } });
      const answer = await polling;
      expectStatus(answer, 200);
      expect(answer.body.toolApproval.status).toBe('allowed');
      // Woken by the decision, not when its wait ran out.
      expect(Date.now() - started).toBeLessThan(ENDED_EARLY_MS);
      expect((await session(owner, sessionId)).pendingToolApprovals).toBeUndefined();

      const events = await eventsOf(owner, sessionId);
      expect(events.find((e) => e.type === 'tool_approval.requested')).toMatchObject({
        actor: { kind: 'user', userId: owner.userId },
        data: { approvalId: approval.approvalId, toolName: 'Execute', summary: 'git push origin main', turnId },
      });
      expect(events.find((e) => e.type === 'tool_approval.resolved')).toMatchObject({
        actor: { userId: owner.userId },
        data: { approvalId: approval.approvalId, status: 'allowed', allowed: true, message: 'go ahead' },
      });
      // Decided once: a second answer is refused.
      const again = await post(owner, `/api/v0/sessions/${sessionId}/tool-approvals/${approval.approvalId}`, { decision: 'deny' });
      expectV0Error(again, 409, 'tool_approval_not_pending');
      expect(again.body.metadata.status).toBe('allowed');
    });

    it('a denial carries its message; a long poll without a decision answers pending after waitMs', async () => {
      const { owner, sessionId, turnId } = await runningTurn();
      const { approvalId } = (await ask(owner, sessionId, turnId).expect(201)).body.toolApproval as Body;
      const started = Date.now();
      const still = await wait(owner, sessionId, approvalId, turnId, 400).expect(200);
      expect(still.body.toolApproval.status).toBe('pending');
      expect(Date.now() - started).toBeGreaterThanOrEqual(350);
      await post(owner, `/api/v0/sessions/${sessionId}/tool-approvals/${approvalId}`, { decision: 'deny', message: 'not on a Friday' }).expect(200);
      const denied = await wait(owner, sessionId, approvalId, turnId).expect(200);
      expect(denied.body.toolApproval).toMatchObject({ status: 'denied', message: 'not on a Friday' });
    });

    it("times out as a denial: the shorter of the organization's and the session's timeout, answered at once to a waiting agent", async () => {
      const owner = await createUser(t, Role.Owner, await createOrganization(t));
      await t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { toolApproval: { tools: ['Execute'], timeoutSeconds: 30 } } })
        .expect(200);
      const policy = await t.http().get('/api/v0/agent/policy').set(owner.auth).expect(200);
      expect(policy.body.toolApproval).toEqual({ tools: ['Execute'], timeoutSeconds: 30 });
      const created = await post(owner, '/api/v0/sessions', { sessionSettings: { toolApproval: { timeoutSeconds: 1 } } }).expect(201);
      const sessionId = created.body.sessionId as string;
      await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'go' }).expect(200);
      const { turnId } = (await post(owner, '/api/v0/agent/claims', {}).expect(200)).body.work as Body;
      const { approvalId, expiresAt, requestedAt } = (await ask(owner, sessionId, turnId).expect(201)).body.toolApproval as Body;
      expect(expiresAt - requestedAt).toBe(1_000);
      const answer = await wait(owner, sessionId, approvalId, turnId, LONG_WAIT_MS).expect(200);
      expect(answer.body.toolApproval.status).toBe('expired');
      // At the timeout, not when the agent's wait ran out.
      expect(Date.now()).toBeLessThan(expiresAt + ENDED_EARLY_MS);
      expect((await t.http().get(`/api/v0/sessions/${sessionId}/tool-approvals`).set(owner.auth).expect(200)).body.toolApprovals).toEqual([]);
      expectV0Error(await post(owner, `/api/v0/sessions/${sessionId}/tool-approvals/${approvalId}`, { decision: 'allow' }), 409, 'tool_approval_not_pending');
      const resolved = (await eventsOf(owner, sessionId)).find((e) => e.type === 'tool_approval.resolved');
      expect(resolved).toMatchObject({ actor: { kind: 'system' }, data: { status: 'expired', allowed: false } });
    });

    it('nobody waiting: the sweep writes the timeout down, and the session stops showing it', async () => {
      const { owner, sessionId, turnId } = await runningTurn({ toolApproval: { timeoutSeconds: 1 } });
      const { approvalId } = (await ask(owner, sessionId, turnId).expect(201)).body.toolApproval as Body;
      await until(
        () => session(owner, sessionId),
        (s) => s.pendingToolApprovals === undefined,
        'the approval to expire',
        LONG_WAIT_MS,
      );
      expect((await wait(owner, sessionId, approvalId, turnId).expect(200)).body.toolApproval.status).toBe('expired');
    });

    it('an interrupt or the end of the turn cancels what the turn waits for; an interrupted turn may not ask', async () => {
      const { owner, sessionId, turnId } = await runningTurn();
      const { approvalId } = (await ask(owner, sessionId, turnId).expect(201)).body.toolApproval as Body;
      const polling = wait(owner, sessionId, approvalId, turnId, LONG_WAIT_MS).then((res) => res);
      await pollsWaiting(t, owner.organizationId, 1);
      await post(owner, `/api/v0/sessions/${sessionId}/interrupt`).expect(200);
      expect((await polling).body.toolApproval.status).toBe('cancelled');
      expectV0Error(await ask(owner, sessionId, turnId), 409, 'turn_interrupted');

      const other = await runningTurn();
      const second = (await ask(other.owner, other.sessionId, other.turnId).expect(201)).body.toolApproval as Body;
      await post(other.owner, `/api/v0/agent/sessions/${other.sessionId}/end-turn`, { turnId: other.turnId }).expect(200);
      expect((await wait(other.owner, other.sessionId, second.approvalId, other.turnId).expect(200)).body.toolApproval.status).toBe('cancelled');
      expect((await session(other.owner, other.sessionId)).pendingToolApprovals).toBeUndefined();
    });

    it('who may see and decide: readers list, writers decide; another member 403, another organization 404, an unknown approval 404', async () => {
      const { owner, sessionId, turnId } = await runningTurn();
      const org = { id: owner.organizationId, slug: owner.organizationSlug };
      const member = await createUser(t, Role.Member, org);
      const guest = await createUser(t, Role.Guest, org);
      const stranger = await createUser(t, Role.Owner);
      const { approvalId } = (await ask(owner, sessionId, turnId).expect(201)).body.toolApproval as Body;
      const decide = (user: TestUser, id = approvalId, body: object = { decision: 'allow' }) =>
        post(user, `/api/v0/sessions/${sessionId}/tool-approvals/${id}`, body);

      expect((await t.http().get(`/api/v0/sessions/${sessionId}/tool-approvals`).set(member.auth).expect(200)).body.toolApprovals).toHaveLength(1);
      expectV0Error(await t.http().get(`/api/v0/sessions/${sessionId}/tool-approvals`).set(stranger.auth), 404, 'session_not_found');
      expectV0Error(await decide(member), 403, 'read_only_role');
      expectV0Error(await decide(guest), 403, 'insufficient_role');
      expectV0Error(await decide(stranger), 404, 'session_not_found');
      expectV0Error(await decide(owner, randomUUID()), 404, 'tool_approval_not_found');
      expectV0Error(await decide(owner, 'nope'), 404, 'tool_approval_not_found');
      expectV0Error(await decide(owner, approvalId, { decision: 'maybe' }), 400, 'validation_failed');
      expectV0Error(await decide(owner, approvalId, { decision: 'allow', extra: 1 }), 400, 'validation_failed');
      // The stranger's agent cannot ask in, nor read, another organization's turn.
      expectV0Error(await ask(stranger, sessionId, turnId), 404, 'session_not_found');
      expectV0Error(await wait(stranger, sessionId, approvalId, turnId), 404, 'session_not_found');
      // Still pending after all of that.
      expect((await wait(owner, sessionId, approvalId, turnId).expect(200)).body.toolApproval.status).toBe('pending');
      // An approval of another session is not found through this one.
      const elsewhere = await runningTurn();
      expectV0Error(
        await post(elsewhere.owner, `/api/v0/sessions/${elsewhere.sessionId}/tool-approvals/${approvalId}`, { decision: 'allow' }),
        404,
        'tool_approval_not_found',
      );
    });

    it('waits count against the long-poll caps: one too many is 429, an answer at once is not counted', async () => {
      const capped = await startTestApp({ LONG_POLLS_PER_ORGANIZATION: '1' });
      try {
        const owner = await createUser(capped, Role.Owner, await createOrganization(capped));
        const sessionId = (await capped.http().post('/api/v0/sessions').set(owner.auth).send({}).expect(201)).body.sessionId as string;
        await capped.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'go' }).expect(200);
        const { turnId } = (await capped.http().post('/api/v0/agent/claims').set(owner.auth).send({}).expect(200)).body.work as Body;
        const asked = await capped
          .http()
          .post(`/api/v0/agent/sessions/${sessionId}/tool-approvals`)
          .set(owner.auth)
          .send({ turnId, toolName: 'Execute', summary: 'make' })
          .expect(201);
        const { approvalId } = asked.body.toolApproval as Body;
        const path = `/api/v0/agent/sessions/${sessionId}/tool-approvals/${approvalId}?turnId=${turnId}`;
        const first = capped
          .http()
          .get(`${path}&waitMs=2000`)
          .set(owner.auth)
          .then((res) => res);
        await pollsWaiting(capped, owner.organizationId, 1);
        const second = await capped.http().get(`${path}&waitMs=2000`).set(owner.auth);
        expectV0Error(second, 429, 'too_many_long_polls');
        expect(second.headers['retry-after']).toBeDefined();
        expect((await capped.http().get(`${path}&waitMs=0`).set(owner.auth).expect(200)).body.toolApproval.status).toBe('pending');
        expect((await first).body.toolApproval.status).toBe('pending');
        // The slot is free again once the wait ended.
        expect((await capped.http().get(`${path}&waitMs=100`).set(owner.auth).expect(200)).body.toolApproval.status).toBe('pending');
      } finally {
        await capped.close();
      }
    });

    it('asking needs the running turn: a turn that is over is 409, bad input 400', async () => {
      const { owner, sessionId, turnId } = await runningTurn();
      expectV0Error(await ask(owner, sessionId, randomUUID()), 409, 'turn_not_active');
      expectV0Error(await ask(owner, sessionId, turnId, { summary: '' }), 400, 'validation_failed');
      expectV0Error(await ask(owner, sessionId, turnId, { toolName: undefined }), 400, 'validation_failed');
      expectV0Error(await wait(owner, sessionId, randomUUID(), turnId, 40_000), 400, 'validation_failed');
      expectV0Error(await wait(owner, sessionId, randomUUID(), turnId), 404, 'tool_approval_not_found');
    });
  });
});

/** Two instances on one PostgreSQL database: the agent waits on one, the user answers on the other. */
(serverUrl() ? describe : describe.skip)('Turn control on several instances (PostgreSQL)', () => {
  let database: TestDatabase;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = {};
    apps.push(await startTestApp(env, database), await startTestApp(env, database));
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await database?.drop();
  });

  it('a decision or an interrupt on one instance wakes the agent waiting on the other at once; the timeout is written down once', async () => {
    const [a, b] = apps;
    const owner = await createUser(a, Role.Owner, await createOrganization(a));
    const start = async (settings: object = {}) => {
      const sessionId = (await a.http().post('/api/v0/sessions').set(owner.auth).send({ sessionSettings: settings }).expect(201)).body.sessionId as string;
      await a.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'go' }).expect(200);
      const { turnId } = (await a.http().post('/api/v0/agent/claims').set(owner.auth).send({}).expect(200)).body.work as Body;
      const ask = await a
        .http()
        .post(`/api/v0/agent/sessions/${sessionId}/tool-approvals`)
        .set(owner.auth)
        .send({ turnId, toolName: 'Execute', summary: 'make deploy' })
        .expect(201);
      return { sessionId, turnId, approvalId: ask.body.toolApproval.approvalId as string };
    };
    const wait = (s: { sessionId: string; turnId: string; approvalId: string }) =>
      a
        .http()
        .get(`/api/v0/agent/sessions/${s.sessionId}/tool-approvals/${s.approvalId}?turnId=${s.turnId}&waitMs=${LONG_WAIT_MS}`)
        .set(owner.auth)
        .then((res) => res);

    const first = await start();
    let started = Date.now();
    let polling = wait(first);
    await pollsWaiting(a, owner.organizationId, 1);
    await b.http().post(`/api/v0/sessions/${first.sessionId}/tool-approvals/${first.approvalId}`).set(owner.auth).send({ decision: 'deny' }).expect(200);
    expect((await polling).body.toolApproval.status).toBe('denied');
    // Woken through the other instance, not when its wait ran out.
    expect(Date.now() - started).toBeLessThan(ENDED_EARLY_MS);
    await a.http().post(`/api/v0/agent/sessions/${first.sessionId}/end-turn`).set(owner.auth).send({ turnId: first.turnId }).expect(200);

    const second = await start();
    started = Date.now();
    polling = wait(second);
    await pollsWaiting(a, owner.organizationId, 1);
    await b.http().post(`/api/v0/sessions/${second.sessionId}/interrupt`).set(owner.auth).expect(200);
    expect((await polling).body.toolApproval.status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(ENDED_EARLY_MS);
    await a.http().post(`/api/v0/agent/sessions/${second.sessionId}/end-turn`).set(owner.auth).send({ turnId: second.turnId }).expect(200);

    // Both instances sweep: the approval expires once, with one event.
    const third = await start({ toolApproval: { timeoutSeconds: 1 } });
    await until(
      async () => (await b.http().get(`/api/v0/sessions/${third.sessionId}`).set(owner.auth).expect(200)).body as Body,
      (s) => s.pendingToolApprovals === undefined,
      'the approval to expire',
      LONG_WAIT_MS,
    );
    await sleep(500);
    const resolved = (await a.app.get(EventLog).read(owner.organizationId, { after: 0, limit: 1000 })).filter(
      (e) => e.type === 'tool_approval.resolved' && e.sessionId === third.sessionId,
    );
    expect(resolved).toHaveLength(1);
    expect(resolved[0].data).toMatchObject({ status: 'expired' });
  });
});

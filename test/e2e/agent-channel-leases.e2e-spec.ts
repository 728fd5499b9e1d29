import { Role } from '../../src/modules/auth';
import { createOrganization, createUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { ENDED_EARLY_MS, LONG_WAIT_MS, sleep } from '../utils/polling';
import { pollsWaiting } from '../utils/long-polls-waiting';
import { channel, expectV0Error, MessageView, Work } from '../utils/fixtures/agent-channel';

/** Turn leases (a short AGENT_LEASE_MS) and the channel's shutdown. */

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
    await sleep(work.leaseExpiresAt - Date.now() + 50);
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
    // Ended before its own short lease runs out too (a turn stays its agent's until another agent takes it), so the
    // pending work is what the next claim finds, however long the calls above took.
    const ended = await api.endTurn(owner, sessionId, { turnId: retaken.turnId });
    expect(ended.body.session).toMatchObject({ status: 'idle', messageCount: 2 });
    expect((await api.claim(owner))?.sessionId).toBe(waiting.sessionId);
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
    const res = await api.claimRaw(owner, { waitMs: LONG_WAIT_MS });
    const took = Date.now() - started;
    expect(res.body.work).toMatchObject({ sessionId, messages: work.messages.map((m) => ({ id: m.id })) });
    expect(res.body.work.turnId).not.toBe(work.turnId);
    // Nothing signals an expiry: the poll times its next look to the queue’s next lease expiry.
    expect(took).toBeGreaterThanOrEqual(work.leaseExpiresAt - started - 50);
    expect(took).toBeLessThan(ENDED_EARLY_MS);
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
    const waiting = api.claimRaw(owner, { waitMs: LONG_WAIT_MS }).then(
      (res) => ({ status: res.status, body: res.body as unknown }),
      (error: Error) => ({ status: 0, body: error.message as unknown }),
    );
    await pollsWaiting(t, owner.organizationId, 1);
    const started = Date.now();
    await t.close();
    const closeTook = Date.now() - started;
    expect(await waiting).toEqual({ status: 200, body: { work: null } });
    // Not held until the claim's wait ran out.
    expect(closeTook).toBeLessThan(ENDED_EARLY_MS);
  });
});

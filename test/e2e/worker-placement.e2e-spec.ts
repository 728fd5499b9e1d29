import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { WorkerChannelService } from '../../src/modules/computers/workers/worker-channel.service';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { until } from '../utils/polling';
import { serverUrl } from '../utils/test-database';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectInvalid, expectStatus, expectV0Error } from '../utils/v0-errors';
import { poolWithToken, registerWorker } from '../utils/workers';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const PLACEMENT_TIMEOUT_MS = 4000;

/**
 * Managed computers on worker pools, from a scripted worker's side and an attacker's: placement by pool, labels and
 * room; steps claimed, logged and finished over the worker channel; the agent token released only to the computer's
 * worker. Real app, real database; the worker is an HTTP client.
 */
describe('Worker placement and steps', () => {
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let stranger: TestUser;

  beforeAll(async () => {
    t = await startTestApp({
      WORKER_LEASE_MS: '60000',
      WORKER_SWEEP_MS: '100',
      WORKER_PLACEMENT_TIMEOUT_MS: String(PLACEMENT_TIMEOUT_MS),
      PROVISIONING_PER_ORGANIZATION: '50',
      COMPUTERS_PER_ORGANIZATION: '100',
    });
    const org = await createOrganization(t, { messageHistory: true });
    owner = await createUser(t, Role.Owner, org);
    member = await createUser(t, Role.Member, org);
    stranger = await createUser(t, Role.Owner);
  });

  afterAll(() => t.close());

  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
  const db = () => t.app.get(DataSource);
  const waitingClaims = () => t.app.get(WorkerChannelService).waitingClaims();

  async function pool(user: TestUser, settings: Json = {}): Promise<{ id: string; name: string; token: string }> {
    const { pool, token } = await poolWithToken(t, user, settings);
    return { id: pool.id, name: pool.name, token };
  }

  const worker = (token: string, labels: string[] = [], computers = 4) =>
    registerWorker(t, token, { labels, capacity: { computers, cpus: 8, memoryMb: 16384, diskMb: 100000 } });

  const create = (user: TestUser, body: Json) =>
    t
      .http()
      .post('/api/v0/computers')
      .set(user.auth)
      .send({ name: `c-${randomUUID().slice(0, 6)}`, provider: 'local', ...body });
  const computer = async (id: string, user = owner): Promise<Json> => (await t.http().get(`/api/v0/computers/${id}`).set(user.auth).expect(200)).body;
  const placedOn = async (id: string, workerId: string, user = owner) =>
    until(
      () => computer(id, user),
      (c) => c.runsOn?.workerId === workerId,
      `computer ${id} to be placed on ${workerId}`,
    );
  const claim = (session: string, waitMs = 0) => t.http().post('/api/v0/worker/claims').set(bearer(session)).send({ waitMs });
  const finish = (session: string, body: Json) => t.http().post('/api/v0/worker/steps/finish').set(bearer(session)).send(body);
  /**
   * `count` 20 s claims of the worker, seen waiting on this instance (the only claims waiting: the file's tests run one
   * at a time). An event delivered late (on PostgreSQL, events reach listeners by NOTIFY, which lags under load) may
   * wake one before the test acts: it then answers sync with no work, and is made again. The tests that wait for claims
   * run in an organization of their own, whose only events are their own: the organization-wide wakes of other tests'
   * computers never reach them.
   */
  async function claimsWaiting(session: string, count = 1): Promise<Array<Promise<Response>>> {
    const slots: Array<{ answered: boolean; answer: Promise<Response> }> = [];
    for (let round = 1; ; round++) {
      while (slots.length < count) {
        const slot = { answered: false, answer: Promise.resolve(undefined as unknown as Response) };
        slot.answer = claim(session, 20_000).then((res) => ((slot.answered = true), res));
        slots.push(slot);
      }
      await until(waitingClaims, (n) => n === count || slots.some((slot) => slot.answered), 'the claims to wait');
      const answered = slots.filter((slot) => slot.answered);
      if (answered.length === 0) return slots.map((slot) => slot.answer);
      for (const slot of answered) {
        expect((await slot.answer).body).toEqual({ work: null, sync: true });
        slots.splice(slots.indexOf(slot), 1);
      }
      if (round === 5) throw new Error('The claims never all waited: five rounds in a row, one answered at once.');
    }
  }
  const heartbeat = (session: string, body: Json = {}) => t.http().post('/api/v0/worker/heartbeat').set(bearer(session)).send(body);
  const stepLog = (session: string, body: Json) => t.http().post('/api/v0/worker/steps/log').set(bearer(session)).send(body);
  /** The computer's provisioning log as the owner reads it: the messages of its steps' session, as one text. */
  async function provisioningLog(id: string): Promise<string> {
    const session = (await computer(id)).provisioningSteps[0].installSessionId as string;
    return JSON.stringify((await t.http().get(`/api/v0/sessions/${session}/messages?limit=100`).set(owner.auth).expect(200)).body);
  }

  it('a computer names a pool by name or id and labels; byom, unknown and foreign pools are refused', async () => {
    const mine = await pool(owner);
    const theirs = await pool(stranger);
    const created = await create(member, { pool: mine.name, labels: ['gpu'] });
    expectStatus(created, 201);
    expect(created.body).toMatchObject({
      status: 'provisioning',
      placement: { poolId: mine.id, poolName: mine.name, labels: ['gpu'] },
      runsOn: { kind: 'waiting', since: expect.any(Number) },
    });
    expectStatus(await create(owner, { pool: mine.id }), 201);
    // No pool: the server's host, as before.
    expect((await create(owner, {})).body.runsOn).toEqual({ kind: 'server' });

    for (const name of [theirs.name, theirs.id, 'no-such-pool']) expectV0Error(await create(owner, { pool: name }), 404, 'worker_pool_not_found');
    expectInvalid(await create(owner, { provider: 'byom', hostId: randomUUID(), remoteUser: 'dev', pool: mine.name }), 'pool');
    expectInvalid(await create(owner, { provider: 'byom', hostId: randomUUID(), remoteUser: 'dev', labels: ['gpu'] }), 'labels');
    expectInvalid(await create(owner, { labels: ['GPU!'] }), 'labels[0]');

    // A pool with computers cannot be deleted out from under them.
    expectV0Error(await t.http().delete(`/api/v0/worker-pools/${mine.id}`).set(owner.auth), 409, 'worker_pool_in_use');
  });

  it('places by pool, labels and room, spreading over the least loaded; the server never runs a worker computer', async () => {
    const gpuPool = await pool(owner, { maxComputersPerWorker: 2 });
    const gpu = await worker(gpuPool.token, ['gpu', 'arch=arm64'], 50);
    const plain = await worker(gpuPool.token, [], 3);

    const wantsGpu = await Promise.all([1, 2, 3].map(async () => (await create(owner, { pool: gpuPool.name, labels: ['gpu'] })).body.id as string));
    await placedOn(wantsGpu[0], gpu.id);
    await placedOn(wantsGpu[1], gpu.id);
    // The worker said 50; the pool caps it at 2: the third waits, never on the worker without the label.
    const third = await computer(wantsGpu[2]);
    expect(third.runsOn).toMatchObject({ kind: 'waiting' });

    const anyLabel = (await create(owner, { pool: gpuPool.name })).body.id as string;
    const shown = await placedOn(anyLabel, plain.id);
    expect(shown.runsOn).toEqual({ kind: 'worker', workerId: plain.id, workerName: expect.any(String), poolId: gpuPool.id, poolName: gpuPool.name });

    // Placed on a worker, its steps wait for that worker: no server instance ran them.
    const steps = (await db().query(`SELECT status, attempts FROM provisioning_steps WHERE computer_id = ANY($1::uuid[])`, [
      [...wantsGpu, anyLabel],
    ])) as Json[];
    expect(steps.every((s) => s.status === 'pending' && s.attempts === 0)).toBe(true);

    const events = (await t.http().get('/api/v0/events').query({ after: '0', limit: '100', types: 'computer.placement_changed' }).set(owner.auth).expect(200))
      .body.events as Json[];
    expect(events.filter((e) => e.type === 'computer.placement_changed' && wantsGpu.includes(e.data.computerId))).toEqual([
      expect.objectContaining({ data: { computerId: expect.any(String), workerId: gpu.id, poolId: gpuPool.id, reason: 'placed' } }),
      expect.objectContaining({ data: { computerId: expect.any(String), workerId: gpu.id, poolId: gpuPool.id, reason: 'placed' } }),
    ]);
  });

  it('a worker claims, logs and finishes the steps of its computers, fenced by its claim; another worker cannot touch them', async () => {
    const p = await pool(owner);
    const mine = await worker(p.token);
    const created = await create(owner, { pool: p.name });
    const agentToken = created.body.agentToken as string;
    const id = created.body.id as string;
    await placedOn(id, mine.id);
    const thief = await worker(p.token);
    // The thief's computers are none: it is offered nothing of another worker's.
    expect((await claim(thief.session)).body).toEqual({ work: null, sync: false });
    expectV0Error(await t.http().get(`/api/v0/worker/computers/${id}/agent-token`).set(bearer(thief.session)), 404, 'computer_not_found');

    const claimed = await claim(mine.session);
    expectStatus(claimed, 200);
    const step = claimed.body.work as Json;
    expect(step).toMatchObject({ computerId: id, position: 0, stepId: 'create-computer', attempt: 1, repos: [], autoInstallDeps: false });
    const fence = { computerId: id, position: 0, claimId: step.claimId };

    // The thief knows the claim id (say it read it off the wire): still not its step.
    expectV0Error(await finish(thief.session, { ...fence, status: 'completed' }), 409, 'step_claim_lost');
    expect((await heartbeat(thief.session, { steps: [fence] })).body.lostSteps).toEqual([{ computerId: id, position: 0 }]);
    // Forged fields and oversized logs are refused whole.
    expectInvalid(await finish(mine.session, { ...fence, status: 'completed', clonedRepoDirectories: ['/etc'] }), 'clonedRepoDirectories');
    expectInvalid(
      await t
        .http()
        .post('/api/v0/worker/steps/log')
        .set(bearer(mine.session))
        .send({ ...fence, text: 'x'.repeat(70_000) }),
      'text',
    );
    expectV0Error(await finish(mine.session, { ...fence, claimId: randomUUID(), status: 'completed' }), 409, 'step_claim_lost');

    const beat = await heartbeat(mine.session, { steps: [fence] });
    expect(beat.body).toMatchObject({ lostSteps: [], computers: [{ computerId: id, status: 'provisioning', tokenIssuedAt: expect.any(Number) }] });
    // One heartbeat renews many claims at once: a forged claim beside the real one is reported lost, the real one kept.
    const forged = { ...fence, claimId: randomUUID() };
    expect((await heartbeat(mine.session, { steps: [forged, fence] })).body.lostSteps).toEqual([{ computerId: id, position: 0 }]);
    expect((await heartbeat(mine.session, { steps: [fence] })).body.lostSteps).toEqual([]);
    expectStatus(
      await t
        .http()
        .post('/api/v0/worker/steps/log')
        .set(bearer(mine.session))
        .send({ ...fence, text: 'workspace made on w.lab' }),
      204,
    );
    const done = await finish(mine.session, { ...fence, status: 'completed' });
    expectStatus(done, 200);
    expect(done.body).toEqual({ computerStatus: 'active' });
    // Finished once: the same claim finishes nothing more.
    expectV0Error(await finish(mine.session, { ...fence, status: 'failed', error: 'late' }), 409, 'step_claim_lost');

    const shown = await computer(id);
    expect(shown).toMatchObject({ status: 'active', provisioningSteps: [{ id: 'create-computer', status: 'completed' }] });
    const log = shown.provisioningSteps[0].installSessionId as string;
    const messages = (await t.http().get(`/api/v0/sessions/${log}/messages?limit=100`).set(owner.auth).expect(200)).body;
    expect(JSON.stringify(messages)).toContain('workspace made on w.lab');

    // Its worker, and only it, gets the agent token, which is the computer's.
    const released = await t.http().get(`/api/v0/worker/computers/${id}/agent-token`).set(bearer(mine.session));
    expectStatus(released, 200);
    expect(released.body).toEqual({ computerId: id, agentToken, tokenIssuedAt: expect.any(Number) });
    // A person's key is no worker's session.
    expectV0Error(await t.http().get(`/api/v0/worker/computers/${id}/agent-token`).set(owner.auth), 401, 'invalid_worker_token');
  });

  it("a log on a lost claim (another worker's, a wrong claim id, a finished step) is 409 step_claim_lost and appends nothing", async () => {
    const p = await pool(owner);
    const mine = await worker(p.token);
    const id = (await create(owner, { pool: p.name })).body.id as string;
    await placedOn(id, mine.id);
    // Registered after the placement: the computer is the first worker's, the second only shares its pool.
    const other = await worker(p.token);
    const step = (await claim(mine.session)).body.work as Json;
    expect(step).toMatchObject({ computerId: id, position: 0 });
    const fence = { computerId: id, position: 0, claimId: step.claimId };
    // A marker of its own for each refused text, so that the log holding any of them names which refusal appended.
    const refused = { otherWorker: `other-worker-${randomUUID()}`, wrongClaim: `wrong-claim-${randomUUID()}`, finished: `after-finish-${randomUUID()}` };

    // Another worker of the same pool, with the right claim id (read off the wire, say): not its step.
    expectV0Error(await stepLog(other.session, { ...fence, text: refused.otherWorker }), 409, 'step_claim_lost');
    // The worker that holds the step, with a claim id that is not the step's.
    expectV0Error(await stepLog(mine.session, { ...fence, claimId: randomUUID(), text: refused.wrongClaim }), 409, 'step_claim_lost');
    // The control: the same worker with its live claim is heard, so the log read below is the one these would reach.
    const heard = `heard-${randomUUID()}`;
    expectStatus(await stepLog(mine.session, { ...fence, text: heard }), 204);
    expectStatus(await finish(mine.session, { ...fence, status: 'completed' }), 200);
    // Finished: the claim that ran the step logs nothing more to it.
    expectV0Error(await stepLog(mine.session, { ...fence, text: refused.finished }), 409, 'step_claim_lost');

    // Appends are done when the log answers: nothing to wait for.
    const log = await provisioningLog(id);
    expect(log).toContain(heard);
    for (const text of Object.values(refused)) expect(log).not.toContain(text);
  });

  it('a failed step puts the computer in error with the reason; retry places it back in the queue of its worker', async () => {
    const p = await pool(owner);
    const w = await worker(p.token);
    const id = (await create(owner, { pool: p.name })).body.id as string;
    await placedOn(id, w.id);
    const step = (await claim(w.session)).body.work as Json;
    const failed = await finish(w.session, { computerId: id, position: 0, claimId: step.claimId, status: 'failed', error: 'disk full on the worker' });
    expect(failed.body).toEqual({ computerStatus: 'error' });
    expect(await computer(id)).toMatchObject({ status: 'error', provisioningSteps: [{ status: 'failed', error: 'disk full on the worker' }] });

    expectStatus(await t.http().post(`/api/v0/computers/${id}/retry`).set(owner.auth), 200);
    expect((await claim(w.session, 5000)).body.work).toMatchObject({ computerId: id, attempt: 1 });
  });

  it('a waiting claim answers as soon as a computer is placed on its worker, and a worker waits in at most two at once', async () => {
    const alone = await createUser(t, Role.Owner, await createOrganization(t));
    const p = await pool(alone);
    const w = await worker(p.token);
    const both = await claimsWaiting(w.session, 2);
    // Both wait (on this instance); a third is refused rather than piling up.
    const third = await claim(w.session, 20_000);
    expectV0Error(third, 429, 'rate_limited');
    expect(third.headers['retry-after']).toBe('1');
    const id = (await create(alone, { pool: p.name })).body.id as string;
    // Unwoken, a claim would look again only after 30 s (its safety re-check), past its 20 s wait, and answer no work.
    const answers = (await Promise.all(both)).map((res) => res.body);
    expect(answers.some((a) => a.work?.computerId === id)).toBe(true);

    // Deleting a computer of the worker's wakes its claim with sync: the worker learns by heartbeat that it is gone.
    const [polling] = await claimsWaiting(w.session);
    expectStatus(await t.http().delete(`/api/v0/computers/${id}`).set(alone.auth), 204);
    const woke = await polling;
    expect(woke.body).toEqual({ work: null, sync: true });
    expect((await heartbeat(w.session)).body.computers).toEqual([]);
  });

  it('a claim waiting while its worker runs a step answers with the next step as soon as that step finishes', async () => {
    const alone = await createUser(t, Role.Owner, await createOrganization(t));
    const p = await pool(alone);
    const w = await worker(p.token);
    const id = (await create(alone, { pool: p.name, repos: ['https://git.example.com/team/app.git'] })).body.id as string;
    await placedOn(id, w.id, alone);
    const first = (await claim(w.session)).body.work as Json;
    expect(first).toMatchObject({ stepId: 'create-computer', repos: ['https://git.example.com/team/app.git'] });
    const [next] = await claimsWaiting(w.session);
    expectStatus(await finish(w.session, { computerId: id, position: 0, claimId: first.claimId, status: 'completed' }), 200);
    // Woken by the finish: unwoken, it would answer no work and no sync at the end of its 20 s (its safety re-check is
    // at 30 s). Woken by a late event of the setup instead, it answers sync, and the worker claims again.
    const answer = (await next).body;
    expect(answer).not.toEqual({ work: null, sync: false });
    const work = answer.work ?? (await claim(w.session)).body.work;
    expect(work).toMatchObject({ computerId: id, position: 1, stepId: 'clone-repos' });
  });

  it("a worker never learns of another organization's computers", async () => {
    const theirs = await pool(stranger);
    const theirWorker = await worker(theirs.token);
    const mine = await pool(owner);
    const myComputer = (await create(owner, { pool: mine.name })).body.id as string;
    // Any pool of the owner's organization would do; none of the stranger's.
    const anyPool = (await create(owner, { labels: [] })).body.runsOn;
    expect(anyPool).toEqual({ kind: 'server' });
    expect((await claim(theirWorker.session)).body.work).toBeNull();
    expect((await heartbeat(theirWorker.session)).body.computers).toEqual([]);
    expectV0Error(await t.http().get(`/api/v0/worker/computers/${myComputer}/agent-token`).set(bearer(theirWorker.session)), 404, 'computer_not_found');
    expect((await computer(myComputer)).runsOn.kind).toBe('waiting');
  });

  /** Provisions a computer of the pool on this worker, as a worker would: claims its one step and completes it. */
  async function activeOn(p: { name: string }, w: { id: string; session: string }, body: Json = {}): Promise<{ id: string; agentToken: string }> {
    const created = await create(owner, { pool: p.name, ...body });
    const id = created.body.id as string;
    await placedOn(id, w.id);
    const step = (await claim(w.session)).body.work as Json;
    expect((await finish(w.session, { computerId: id, position: 0, claimId: step.claimId, status: 'completed' })).body).toEqual({ computerStatus: 'active' });
    return { id, agentToken: created.body.agentToken as string };
  }
  const agentPolicy = (token: string) => t.http().get('/api/v0/agent/policy').set(bearer(token));

  it('a worker that leaves gives up its computers: new agent tokens (the copies it holds are dead), every step again, placed on another', async () => {
    const p = await pool(owner);
    const leaving = await worker(p.token);
    const { id, agentToken } = await activeOn(p, leaving);
    expectStatus(await agentPolicy(agentToken), 200);
    const staying = await worker(p.token);

    expectStatus(await t.http().post('/api/v0/worker/leave').set(bearer(leaving.session)), 204);
    const moved = await placedOn(id, staying.id);
    expect(moved).toMatchObject({ status: 'provisioning', provisioningSteps: [{ id: 'create-computer', status: 'pending' }] });
    expect(moved.clonedRepoDirectories).toEqual([]);
    // The token the old worker held opens nothing; the new worker gets the new one, and only it.
    expectV0Error(await agentPolicy(agentToken), 401, 'invalid_credentials');
    const released = (await t.http().get(`/api/v0/worker/computers/${id}/agent-token`).set(bearer(staying.session)).expect(200)).body;
    expect(released.agentToken).not.toBe(agentToken);
    expectStatus(await agentPolicy(released.agentToken), 200);
    expectV0Error(await t.http().get(`/api/v0/worker/computers/${id}/agent-token`).set(bearer(leaving.session)), 401, 'invalid_worker_token');

    const events = (
      await t
        .http()
        .get('/api/v0/events')
        .query({ after: '0', limit: '100', types: 'computer.placement_changed,computer.status_changed' })
        .set(owner.auth)
        .expect(200)
    ).body.events as Json[];
    const mine = events.filter((e) => e.data.computerId === id).map((e) => [e.type, e.data.reason ?? `${e.data.from}->${e.data.to}`]);
    expect(mine).toEqual(
      expect.arrayContaining([
        ['computer.placement_changed', 'worker_left'],
        ['computer.status_changed', 'active->provisioning'],
      ]),
    );
    // Provisioned again on the new worker, from the first step.
    expect((await claim(staying.session)).body.work).toMatchObject({ computerId: id, position: 0, attempt: 1 });
  });

  it('a lost, evicted or revoked worker gives up its computers the same way; so does one of a deleted pool', async () => {
    const p = await pool(owner);
    const lost = await worker(p.token);
    const onLost = await activeOn(p, lost);
    // Its lease ran out (as if a minute passed without a heartbeat): the sweep finds it.
    await db().query(`UPDATE workers SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [lost.id]);
    await until(
      () => computer(onLost.id),
      (c) => c.runsOn.kind === 'waiting' && c.status === 'provisioning',
      "the lost worker's computer to wait for another",
    );
    expectV0Error(await agentPolicy(onLost.agentToken), 401, 'invalid_credentials');

    const evicted = await worker(p.token);
    // The computer of the lost worker goes to the only worker left.
    await placedOn(onLost.id, evicted.id);
    expectStatus(await t.http().delete(`/api/v0/worker-pools/${p.id}/workers/${evicted.id}`).set(owner.auth), 200);
    expect((await computer(onLost.id)).runsOn.kind).toBe('waiting');

    const { pool: other, token, tokenId } = await poolWithToken(t, owner);
    const revoked = await registerWorker(t, token);
    const byLabel = (await create(owner, { labels: [], pool: other.name })).body.id as string;
    await placedOn(byLabel, revoked.id);
    expectStatus(await t.http().delete(`/api/v0/worker-pools/${other.id}/enrollment-tokens/${tokenId}`).set(owner.auth), 200);
    expect((await computer(byLabel)).runsOn.kind).toBe('waiting');
  });

  it('a computer no worker takes within WORKER_PLACEMENT_TIMEOUT_MS goes to error saying why; retry waits again', async () => {
    const p = await pool(owner);
    await worker(p.token, ['gpu']);
    const id = (await create(owner, { pool: p.name, labels: ['tpu'] })).body.id as string;
    const failed = await until(
      () => computer(id),
      (c) => c.status === 'error',
      'the placement to time out',
      PLACEMENT_TIMEOUT_MS * 10,
    );
    expect(failed.provisioningSteps[0]).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^No worker of its pool .* had room for \d+ s \(WORKER_PLACEMENT_TIMEOUT_MS\)/),
    });
    const retried = await t.http().post(`/api/v0/computers/${id}/retry`).set(owner.auth);
    expect(retried.body).toMatchObject({ status: 'provisioning', runsOn: { kind: 'waiting' } });
    expect(retried.body.runsOn.since).toBeGreaterThan(failed.runsOn.since);
  });

  it('deleting a pool whose workers hold computers placed by labels alone moves them off first', async () => {
    const p = await pool(owner);
    const w = await worker(p.token, ['arm']);
    const id = (await create(owner, { labels: ['arm'] })).body.id as string;
    await placedOn(id, w.id);
    expectStatus(await t.http().delete(`/api/v0/worker-pools/${p.id}`).set(owner.auth), 204);
    expect(await computer(id)).toMatchObject({ status: 'provisioning', placement: { poolId: null, labels: ['arm'] }, runsOn: { kind: 'waiting' } });
  });

  it("a step finished while its worker leaves: either the finish or the recovery goes first, never a deadlock's 500", async () => {
    // The recovery locks the computer, then its steps; a finish that locked the step first, then the computer, could
    // deadlock with it (PostgreSQL then aborts one of the two).
    for (let round = 0; round < 6; round++) {
      const p = await pool(owner);
      const leaving = await worker(p.token);
      const id = (await create(owner, { pool: p.name })).body.id as string;
      await placedOn(id, leaving.id);
      const step = (await claim(leaving.session)).body.work as Json;
      const [finished, left] = await Promise.all([
        finish(leaving.session, { computerId: id, position: 0, claimId: step.claimId, status: 'completed' }),
        t.http().post('/api/v0/worker/leave').set(bearer(leaving.session)),
      ]);
      expectStatus(left, 204);
      if (finished.status !== 200) expect([401, 409]).toContain(finished.status);
      // Either way the computer is off the worker that left, its steps to run again.
      expect(await computer(id)).toMatchObject({ status: 'provisioning', runsOn: { kind: 'waiting' }, provisioningSteps: [{ status: 'pending' }] });
    }
  });

  // PostgreSQL only: PGlite runs one transaction at a time, so no claim could run beside the one holding the lock.
  (serverUrl() ? it : it.skip)('a step to abandon whose computer another transaction holds is left for the next look, never waited on', async () => {
    const p = await pool(owner);
    const w = await worker(p.token);
    const id = (await create(owner, { pool: p.name })).body.id as string;
    await placedOn(id, w.id);
    expect((await claim(w.session)).body.work).toMatchObject({ computerId: id, position: 0 });
    // Its last run went silent: the lease is over, and no run is left to give it.
    await db().query(`UPDATE provisioning_steps SET attempts = 3, lease_expires_at = now() - interval '1 second' WHERE computer_id = $1`, [id]);
    // What a deletion or a worker's recovery does: lock the computer, then wait for its steps. A claim that waited for
    // the computer's lock while holding the step would deadlock with it.
    const holder = db().createQueryRunner();
    await holder.connect();
    let timer: NodeJS.Timeout | undefined;
    try {
      await holder.startTransaction();
      await holder.query(`SELECT 1 FROM computers WHERE id = $1 FOR UPDATE`, [id]);
      const blocked = new Promise<'blocked'>((resolve) => (timer = setTimeout(() => resolve('blocked'), 20_000)));
      const answer = await Promise.race([claim(w.session).then((res) => res), blocked]);
      expect(answer === 'blocked' ? answer : answer.body).toEqual({ work: null, sync: false });
      const [step] = (await db().query(`SELECT status, attempts FROM provisioning_steps WHERE computer_id = $1`, [id])) as Json[];
      expect(step).toEqual({ status: 'running', attempts: 3 });
    } finally {
      clearTimeout(timer);
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    }
    // Once the lock is free, the next look abandons it.
    expect((await claim(w.session)).body).toEqual({ work: null, sync: true });
    expect(await computer(id)).toMatchObject({
      status: 'error',
      provisioningSteps: [{ status: 'failed', error: expect.stringContaining('Abandoned: 3 runs took this step') }],
    });
  });

  it('creating computers while their pool is deleted answers 201 or 404 and the deletion 204 or 409, never 500; the answers agree', async () => {
    const poolComputers = async (poolId: string) =>
      ((await db().query(`SELECT count(*)::int AS n FROM computers WHERE pool_id = $1`, [poolId])) as Json[])[0].n as number;
    // Rounds send the deletion first, among the creations and last, so that both orders are likely met; which one
    // wins a round is the database's to say, not the test's.
    for (const at of [0, 4, 8]) {
      const p = await pool(owner);
      const requests = Array.from({ length: 8 }, () => create(owner, { pool: p.name }));
      const deletion = t.http().delete(`/api/v0/worker-pools/${p.id}`).set(owner.auth);
      const answers = await Promise.all([...requests.slice(0, at), deletion, ...requests.slice(at)]);
      const deleted = answers[at];
      const created = answers.filter((_, i) => i !== at);

      for (const res of created) if (res.status !== 201) expectV0Error(res, 404, 'worker_pool_not_found');
      if (deleted.status !== 204) expectV0Error(deleted, 409, 'worker_pool_in_use');
      const made = created.filter((res) => res.status === 201).map((res) => res.body.id as string);
      // What the answers said is what the database holds: no computer of a 404 went in, none of a 201 is missing.
      expect(await poolComputers(p.id)).toBe(made.length);
      const shown = await t.http().get(`/api/v0/worker-pools/${p.id}`).set(owner.auth);
      if (deleted.status === 204) {
        // A computer in before the deletion would have made it 409; one after it finds no pool.
        expect(made).toEqual([]);
        expectV0Error(shown, 404, 'worker_pool_not_found');
      } else {
        // In use means one of these went in first; the pool stayed, so every one of them found it.
        expect(made).toHaveLength(created.length);
        expectStatus(shown, 200);
        for (const id of made) expect((await computer(id)).placement.poolId).toBe(p.id);
        // Their computers gone, the pool goes too: the quotas stay clear for the rounds after.
        for (const id of made) expectStatus(await t.http().delete(`/api/v0/computers/${id}`).set(owner.auth), 204);
        expectStatus(await t.http().delete(`/api/v0/worker-pools/${p.id}`).set(owner.auth), 204);
      }
    }
  });
});

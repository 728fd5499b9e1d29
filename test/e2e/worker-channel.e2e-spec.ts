import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { WorkerSweepJob } from '../../src/modules/computers/workers/worker-sweep.job';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { sleep, until } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';
import { serverUrl } from '../utils/test-database';
import { expectInvalid, expectStatus, expectV0Error } from '../utils/v0-errors';
import { poolWithToken as poolOf, workerRegistration } from '../utils/workers';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Long enough that a heartbeat every 300 ms keeps it under a loaded CI machine; short enough to wait for a lost one. */
const LEASE_MS = 3000;
const WORKERS_PER_POOL = 3;
const CAPACITY = { computers: 4, cpus: 8, memoryMb: 16384, diskMb: 100000 };

/**
 * The worker channel from a worker's side and an attacker's: a scripted worker registers, heartbeats and leaves, and
 * stolen worker tokens, lying registrations, revoked and expired tokens and evictions are tried against the real app.
 */
describe('Worker channel', () => {
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let stranger: TestUser;

  beforeAll(async () => {
    t = await startTestApp({ WORKER_LEASE_MS: String(LEASE_MS), WORKER_SWEEP_MS: '100', WORKERS_PER_POOL: String(WORKERS_PER_POOL) });
    const org = await createOrganization(t);
    owner = await createUser(t, Role.Owner, org);
    member = await createUser(t, Role.Member, org);
    stranger = await createUser(t, Role.Owner);
  });

  afterAll(() => t.close());

  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

  const poolWithToken = (user: TestUser, pool: Json = {}) => poolOf(t, user, pool);

  const registration = (more: Json = {}) => workerRegistration({ labels: ['gpu'], capacity: CAPACITY, ...more });
  const register = (token: string, more: Json = {}) => t.http().post('/api/v0/worker/register').set(bearer(token)).send(registration(more));
  const heartbeat = (session: string) =>
    t
      .http()
      .post('/api/v0/worker/heartbeat')
      .set(bearer(session))
      .send({ usage: { cpuPercent: 12.5, memoryMb: 512, diskMb: 64 } });
  const workersOf = async (user: TestUser, poolId: string): Promise<Json[]> =>
    (await t.http().get(`/api/v0/worker-pools/${poolId}/workers`).set(user.auth).expect(200)).body.workers;
  const workerRow = async (id: string): Promise<Json> => ((await t.app.get(DataSource).query('SELECT * FROM workers WHERE id = $1', [id])) as Json[])[0];

  it('registers into the pool its token names, capped by the pool, and keeps its lease with heartbeats', async () => {
    const { pool, token } = await poolWithToken(owner, { maxComputersPerWorker: 2 });
    const res = await register(token);
    expectStatus(res, 201);
    expect(res.body).toMatchObject({
      poolId: pool.id,
      poolName: pool.name,
      leaseMs: LEASE_MS,
      heartbeatMs: LEASE_MS / 3,
      capacity: { ...CAPACITY, computers: 2 },
    });
    expect(res.body.sessionToken).toMatch(/^wks_[A-Za-z0-9_-]{43}$/);
    const session = res.body.sessionToken as string;
    // Kept as a hash only.
    expect(JSON.stringify(await workerRow(res.body.workerId))).not.toContain(session.slice(4));

    // Heartbeats past its lease keep it online.
    const until_ = Date.now() + LEASE_MS + 1000;
    while (Date.now() < until_) {
      expectStatus(await heartbeat(session), 200);
      await sleep(300);
    }
    const [listed] = await workersOf(owner, pool.id);
    expect(listed).toMatchObject({
      id: res.body.workerId,
      status: 'online',
      labels: ['gpu'],
      usage: { cpuPercent: 12.5, memoryMb: 512, diskMb: 64 },
      endedAt: null,
    });

    const events = (await t.http().get('/api/v0/events').query({ after: '0', limit: '100' }).set(owner.auth).expect(200)).body.events as Json[];
    expect(events.find((e) => e.type === 'worker.joined' && e.data.workerId === res.body.workerId)).toMatchObject({
      actor: { kind: 'worker', workerId: res.body.workerId },
      data: { poolId: pool.id, capacity: { computers: 2 } },
    });
    expect(JSON.stringify(events)).not.toContain(session.slice(4));

    expectStatus(await t.http().post('/api/v0/worker/leave').set(bearer(session)), 204);
    expectV0Error(await heartbeat(session), 401, 'invalid_worker_token');
    expect((await workersOf(owner, pool.id))[0]).toMatchObject({ status: 'left', endedAt: expect.any(Number) });
  });

  it("a stolen enrollment or session token opens nothing but the worker channel's own calls", async () => {
    const { pool, token } = await poolWithToken(owner);
    const session = (await register(token)).body.sessionToken as string;
    for (const stolen of [token, session]) {
      for (const [method, path] of [
        ['get', '/api/v0/worker-pools'],
        ['get', `/api/v0/worker-pools/${pool.id}/workers`],
        ['get', '/api/v0/sessions'],
        ['get', '/api/v0/computers'],
        ['get', '/api/v0/events'],
        ['post', '/api/v0/agent/claims'],
        ['get', '/api/v0/me'],
      ] as const) {
        const res = await t.http()[method](path).set(bearer(stolen)).send({});
        expect([stolen.slice(0, 4), path, res.status, res.body.metadata?.code]).toEqual([stolen.slice(0, 4), path, 403, 'worker_token_not_accepted']);
      }
    }
    // Each token works only where it is meant to: the enrollment token registers, the session token heartbeats.
    expectV0Error(await heartbeat(token), 401, 'invalid_worker_token');
    expectV0Error(await register(session), 401, 'invalid_worker_token');
    // People's and agents' credentials are not worker tokens.
    const computer = await t.http().post('/api/v0/computers').set(owner.auth).send({ name: 'box', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
    for (const credential of [owner.key, computer.body.agentToken as string, 'wks_' + 'A'.repeat(43), 'wkt_' + 'A'.repeat(43)]) {
      expectV0Error(await register(credential), 401, 'invalid_worker_token');
      expectV0Error(await heartbeat(credential), 401, 'invalid_worker_token');
    }
    expectV0Error(await t.http().post('/api/v0/worker/heartbeat').send({}), 401, 'invalid_worker_token');
    expect((await workersOf(owner, pool.id)).map((w) => w.status)).toEqual(['online']);
  });

  it('a registration that lies about itself is refused whole, and nothing is stored', async () => {
    const { pool, token } = await poolWithToken(owner);
    const lies: Array<[string, Json]> = [
      ['capacity.computers', { capacity: { ...CAPACITY, computers: 1e9 } }],
      ['capacity.computers', { capacity: { ...CAPACITY, computers: -1 } }],
      ['capacity.computers', { capacity: { ...CAPACITY, computers: 0 } }],
      ['capacity.computers', { capacity: { ...CAPACITY, computers: 'NaN' } }],
      ['capacity.cpus', { capacity: { ...CAPACITY, cpus: 2.5 } }],
      ['capacity.memoryMb', { capacity: { ...CAPACITY, memoryMb: 2 ** 40 } }],
      ['capacity.extra', { capacity: { ...CAPACITY, extra: 1 } }],
      ['labels[0]', { labels: ['GPU'] }],
      ['labels', { labels: Array.from({ length: 17 }, (_, i) => `l${i}`) }],
      ['labels', { labels: ['gpu', 'gpu'] }],
      ['hostname', { hostname: 'not a host' }],
      ['name', { name: 'two\nlines' }],
      ['version', { version: '1.0; rm -rf /' }],
      ['organizationId', { organizationId: randomUUID() }],
    ];
    for (const [field, lie] of lies) expectInvalid(await register(token, lie), field);
    expect(await workersOf(owner, pool.id)).toEqual([]);
  });

  it('an unsandboxed worker joins only a pool that allows it', async () => {
    const strict = await poolWithToken(owner);
    expectV0Error(await register(strict.token, { sandboxed: false }), 403, 'worker_sandbox_required');
    expect(await workersOf(owner, strict.pool.id)).toEqual([]);
    const lax = await poolWithToken(owner, { allowUnsandboxed: true });
    expectStatus(await register(lax.token, { sandboxed: false }), 201);
    expect((await workersOf(owner, lax.pool.id))[0]).toMatchObject({ sandboxed: false });
  });

  it("revoking an enrollment token refuses new registrations with it and ends its workers' sessions at once", async () => {
    const { pool, token, tokenId } = await poolWithToken(owner);
    const session = (await register(token)).body.sessionToken as string;
    const other = await t.http().post(`/api/v0/worker-pools/${pool.id}/enrollment-tokens`).set(owner.auth).send({ name: 'other' });
    const survivor = (await register(other.body.token as string)).body.sessionToken as string;

    expectStatus(await t.http().delete(`/api/v0/worker-pools/${pool.id}/enrollment-tokens/${tokenId}`).set(owner.auth), 200);
    const refused = await heartbeat(session);
    expectV0Error(refused, 401, 'invalid_worker_token');
    expect(refused.body.metadata.workerStatus).toBe('revoked');
    expectV0Error(await register(token), 401, 'invalid_worker_token');
    expectStatus(await heartbeat(survivor), 200);
    const events = (await t.http().get('/api/v0/events').query({ after: '0', limit: '100' }).set(owner.auth).expect(200)).body.events as Json[];
    expect(events.filter((e) => e.type === 'worker.left' && e.data.poolId === pool.id).map((e) => e.data.reason)).toEqual(['revoked']);
  });

  (serverUrl() ? it : it.skip)('a registration racing the revocation of its token never leaves a worker online with it', async () => {
    const { pool, token, tokenId } = await poolWithToken(owner);
    const db = t.app.get(DataSource);
    const waiting = async () => ((await db.query('SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted')) as Array<{ n: number }>)[0].n;
    // The pool's row held, so both queue behind it: the revocation first, then the registration, which has read the
    // token (not yet revoked) before it waits.
    const holder = db.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    let revoking: Promise<Awaited<ReturnType<typeof register>>> | undefined;
    let registering: Promise<Awaited<ReturnType<typeof register>>> | undefined;
    try {
      await holder.query('SELECT id FROM worker_pools WHERE id = $1 FOR UPDATE', [pool.id]);
      revoking = t
        .http()
        .delete(`/api/v0/worker-pools/${pool.id}/enrollment-tokens/${tokenId}`)
        .set(owner.auth)
        .then((res) => res);
      await until(waiting, (n) => n >= 1, 'the revocation to wait for the pool');
      registering = register(token).then((res) => res);
      await until(waiting, (n) => n >= 2, 'the registration to wait for the pool');
    } finally {
      await holder.commitTransaction();
      await holder.release();
    }
    expectStatus(await revoking!, 200);
    expectV0Error(await registering!, 401, 'invalid_worker_token');
    expect((await workersOf(owner, pool.id)).filter((w) => w.status === 'online')).toEqual([]);
  });

  it('an expired enrollment token registers nothing', async () => {
    const { pool, token, tokenId } = await poolWithToken(owner);
    await t.app.get(DataSource).query(`UPDATE worker_enrollment_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, [tokenId]);
    expectV0Error(await register(token), 401, 'invalid_worker_token');
    expect(await workersOf(owner, pool.id)).toEqual([]);
  });

  it("an owner evicts a worker; another organization's owner and a member cannot", async () => {
    const { pool, token } = await poolWithToken(owner);
    const registered = (await register(token)).body as Json;
    const path = `/api/v0/worker-pools/${pool.id}/workers/${registered.workerId}`;
    expectV0Error(await t.http().delete(path).set(stranger.auth), 404, 'worker_pool_not_found');
    expectV0Error(await t.http().delete(path).set(member.auth), 403, 'insufficient_role');
    expectV0Error(await t.http().get(`/api/v0/worker-pools/${pool.id}/workers`).set(stranger.auth), 404, 'worker_pool_not_found');
    // The stranger's own pool with this worker's id: not there.
    const theirs = await poolWithToken(stranger);
    expectV0Error(await t.http().delete(`/api/v0/worker-pools/${theirs.pool.id}/workers/${registered.workerId}`).set(stranger.auth), 404, 'worker_not_found');
    expectStatus(await heartbeat(registered.sessionToken as string), 200);

    const evicted = await t.http().delete(path).set(owner.auth);
    expectStatus(evicted, 200);
    expect(evicted.body).toMatchObject({ id: registered.workerId, status: 'evicted' });
    expect((await heartbeat(registered.sessionToken as string)).body.metadata.workerStatus).toBe('evicted');
    expect((await t.http().delete(path).set(owner.auth)).body.status).toBe('evicted');
  });

  it('a worker that stops heartbeating is lost after its lease, and its session ends', async () => {
    const { pool, token } = await poolWithToken(owner);
    const registered = (await register(token)).body as Json;
    const lost = await until(
      () => workerRow(registered.workerId as string),
      (row) => row.status === 'lost',
      'the worker to be lost',
      20_000,
    );
    expect(new Date(lost.ended_at as string).getTime()).toBeGreaterThanOrEqual(new Date(lost.lease_expires_at as string).getTime());
    expect((await heartbeat(registered.sessionToken as string)).body.metadata.workerStatus).toBe('lost');
    // A sweep again finds nothing more: the worker was ended once.
    expect(await t.app.get(WorkerSweepJob).sweep()).toBe(0);
    const events = (await t.http().get('/api/v0/events').query({ after: '0', limit: '100' }).set(owner.auth).expect(200)).body.events as Json[];
    expect(events.filter((e) => e.type === 'worker.left' && e.data.poolId === pool.id).map((e) => e.data.reason)).toEqual(['lost']);
  });

  it('a pool holds at most WORKERS_PER_POOL workers online, even when they register at once', async () => {
    const { pool, token } = await poolWithToken(owner);
    const racing = await Promise.all(Array.from({ length: WORKERS_PER_POOL + 2 }, () => register(token)));
    expect(racing.filter((res) => res.status === 201)).toHaveLength(WORKERS_PER_POOL);
    for (const refused of racing.filter((res) => res.status !== 201)) {
      expect(refused.body.metadata).toEqual({ code: 'quota_exceeded', quota: 'WORKERS_PER_POOL', limit: WORKERS_PER_POOL });
    }
    // One leaves: its place is free again.
    const leaving = racing.find((res) => res.status === 201)!.body.sessionToken as string;
    expectStatus(await t.http().post('/api/v0/worker/leave').set(bearer(leaving)), 204);
    expectStatus(await register(token), 201);
    expect((await workersOf(owner, pool.id)).filter((w) => w.status === 'online')).toHaveLength(WORKERS_PER_POOL);
  });
});

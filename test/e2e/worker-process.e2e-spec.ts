import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { until, within } from '../utils/polling';
import { PROCESSES_TIMEOUT_MS, runNode, startWorker, WorkerProcess } from '../utils/processes';
import { workersCanSandbox } from '../utils/sandbox';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectStatus } from '../utils/v0-errors';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A heartbeat every 3 s: a session the server ends is noticed within seconds, and a crashed worker restarts well within its lease. */
const LEASE_MS = 9000;

/**
 * `agent-platform worker` as a real process against the real app, from the operator's side (it registers, shows up in
 * its pool, leaves on SIGTERM, resumes after a crash) and an attacker's (its token on the command line or in its output,
 * a revoked token keeping it online).
 */
describe('The worker process', () => {
  let t: TestApp;
  let url: string;
  let owner: TestUser;
  const folders: string[] = [];
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    t = await startTestApp({ WORKER_LEASE_MS: String(LEASE_MS), WORKER_SWEEP_MS: '100' });
    url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    owner = await createUser(t, Role.Owner, await createOrganization(t));
  });

  afterAll(async () => {
    for (const worker of workers) await worker.killHard();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
    await t.close();
  });

  /** A new pool with an enrollment token, and a home for one worker: the token in a file only its user reads. */
  async function pool(): Promise<{ poolId: string; token: string; tokenId: string; env: Record<string, string>; dataDir: string }> {
    const created = await t
      .http()
      .post('/api/v0/worker-pools')
      .set(owner.auth)
      // Where the sandbox cannot start (a machine without bubblewrap), the worker runs unsandboxed in a pool that allows it.
      .send({ name: `pool-${randomUUID().slice(0, 8)}`, allowUnsandboxed: !workersCanSandbox() });
    expectStatus(created, 201);
    const token = await t.http().post(`/api/v0/worker-pools/${created.body.id}/enrollment-tokens`).set(owner.auth).send({ name: 'rack' });
    expectStatus(token, 201);
    const home = mkdtempSync(join(tmpdir(), 'ap-worker-'));
    folders.push(home);
    writeFileSync(join(home, 'token'), `${token.body.token}\n`, { mode: 0o600 });
    const dataDir = join(home, 'data');
    return {
      poolId: created.body.id as string,
      token: token.body.token as string,
      tokenId: token.body.id as string,
      env: { WORKER_TOKEN_FILE: join(home, 'token'), WORKER_DATA_DIR: dataDir, LOCAL_SANDBOX: workersCanSandbox() ? 'on' : 'off' },
      dataDir,
    };
  }

  const start = async (env: Record<string, string>, args: string[] = []) => {
    const worker = await startWorker(url, env, args);
    workers.push(worker);
    return worker;
  };
  const workersOf = async (poolId: string): Promise<Json[]> =>
    (await t.http().get(`/api/v0/worker-pools/${poolId}/workers`).set(owner.auth).expect(200)).body.workers as Json[];
  const registeredId = (output: string) => /registered as (\S+) in pool/.exec(output)?.[1];
  const saved = (dataDir: string) => JSON.parse(readFileSync(join(dataDir, 'worker.json'), 'utf8')) as Json;

  it(
    'registers with the token from its file, is online in its pool, and never prints the token or its session',
    async () => {
      const { poolId, token, env, dataDir } = await pool();
      const worker = await start(env, ['--name', 'rack-2-a', '--labels', 'gpu,arch=x64']);
      const workerId = registeredId(worker.output());
      const [listed] = await until(
        () => workersOf(poolId),
        (list) => list.length === 1 && list[0].usage !== null,
        'the worker online with its first heartbeat',
      );
      expect(listed).toMatchObject({ id: workerId, name: 'rack-2-a', labels: ['gpu', 'arch=x64'], status: 'online', sandboxed: workersCanSandbox() });
      // Its session, kept for a restart, is its user's alone.
      const session = saved(dataDir);
      expect(session).toEqual({
        workerId,
        sessionToken: expect.stringMatching(/^wks_/),
        url,
        poolName: expect.any(String),
        heartbeatMs: LEASE_MS / 3,
        leaseMs: LEASE_MS,
      });
      expect(statSync(join(dataDir, 'worker.json')).mode & 0o777).toBe(0o600);
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      expect(JSON.stringify(session)).not.toContain(token);
      expect(await worker.stop()).toBe(0);
      for (const secret of [token, token.slice(4), session.sessionToken as string, (session.sessionToken as string).slice(4)]) {
        expect(worker.output()).not.toContain(secret);
      }
    },
    PROCESSES_TIMEOUT_MS,
  );

  it(
    'refuses its token on the command line without saying it back, and one without a token: exit 64, nothing registered',
    async () => {
      const { poolId, token, dataDir } = await pool();
      for (const args of [['--token', token], [`--token=${token}`]]) {
        const run = await runNode('dist/worker/main.js', ['--url', url, ...args], { WORKER_DATA_DIR: dataDir });
        expect([run.code, run.stdout]).toEqual([64, '']);
        expect(run.stderr).toMatch(/--token is not accepted/);
        expect(run.stderr).not.toContain(token.slice(4));
      }
      const missing = await runNode('dist/worker/main.js', ['--url', url], { WORKER_DATA_DIR: dataDir });
      expect([missing.code, missing.stderr]).toEqual([64, expect.stringMatching(/^The pool's enrollment token is required/)]);
      expect(await workersOf(poolId)).toEqual([]);
    },
    PROCESSES_TIMEOUT_MS,
  );

  it(
    'leaves its pool on SIGTERM: left at once (not lost a lease later), exit 0, its session forgotten',
    async () => {
      const { poolId, env, dataDir } = await pool();
      const worker = await start(env);
      expect(await worker.stop()).toBe(0);
      expect(await workersOf(poolId)).toEqual([expect.objectContaining({ id: registeredId(worker.output()), status: 'left' })]);
      expect(existsSync(join(dataDir, 'worker.json'))).toBe(false);
    },
    PROCESSES_TIMEOUT_MS,
  );

  it(
    'stops within a few heartbeats once its enrollment token is revoked: exit 1 saying so, its session file removed',
    async () => {
      const { poolId, tokenId, env, dataDir } = await pool();
      const worker = await start(env);
      expectStatus(await t.http().delete(`/api/v0/worker-pools/${poolId}/enrollment-tokens/${tokenId}`).set(owner.auth), 200);
      expect(await within(worker.exited(), 3 * LEASE_MS, 'the worker to exit')).toBe(1);
      expect(worker.output()).toMatch(/ended this worker's session \(revoked\)/);
      expect(existsSync(join(dataDir, 'worker.json'))).toBe(false);
      expect(await workersOf(poolId)).toEqual([expect.objectContaining({ status: 'revoked' })]);
    },
    PROCESSES_TIMEOUT_MS,
  );

  it(
    'after a crash, a restart resumes the saved session as the same worker, still online',
    async () => {
      const { poolId, env, dataDir } = await pool();
      const first = await start(env);
      const workerId = registeredId(first.output());
      await first.killHard();
      const second = await start(env);
      expect(second.output()).toMatch(new RegExp(`registered as ${workerId} in pool \\S+ \\(the saved session, resumed\\)`));
      expect(saved(dataDir).workerId).toBe(workerId);
      expect(await workersOf(poolId)).toEqual([expect.objectContaining({ id: workerId, status: 'online' })]);
      expect(await second.stop()).toBe(0);
      expect(await workersOf(poolId)).toEqual([expect.objectContaining({ id: workerId, status: 'left' })]);
    },
    PROCESSES_TIMEOUT_MS,
  );
});

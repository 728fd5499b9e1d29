import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { Body, until } from '../utils/polling';
import { environmentOf, gone, theAgent } from '../utils/process-state';
import { PROCESSES_TIMEOUT_MS, startWorker, WorkerProcess } from '../utils/processes';
import { describeInSandbox, itInSandbox } from '../utils/sandbox';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectStatus, expectV0Error } from '../utils/v0-errors';
import { poolWithToken } from '../utils/workers';

const LEASE_MS = 3000;

/**
 * Issue 43's done-when, end to end: two workers as real processes (each its own data folder, where its computers'
 * sandboxes live) against the real app on the CI's engine. Placement by pool and labels; a worker killed with
 * `kill -9` and its computers provisioned again elsewhere with new agent tokens; a worker whose enrollment token is
 * revoked mid-run; deletion cleaning the worker's disk.
 */
describeInSandbox('A pool of two workers', () => {
  let t: TestApp;
  let owner: TestUser;
  let home: string;
  let url: string;
  let poolName: string;
  let poolId: string;
  const workers: Record<'gpu' | 'plain', { process: WorkerProcess; dataDir: string; tokenId: string; start: () => Promise<WorkerProcess> }> = {} as never;

  beforeAll(async () => {
    t = await startTestApp({ WORKER_LEASE_MS: String(LEASE_MS), WORKER_SWEEP_MS: '100', PROVISIONING_LEASE_MS: String(LEASE_MS) });
    owner = await createUser(t, Role.Owner, await createOrganization(t));
    url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    home = mkdtempSync(join(tmpdir(), 'ap-worker-fleet-'));
    const made = await poolWithToken(t, owner);
    poolName = made.pool.name as string;
    poolId = made.pool.id as string;
    for (const [kind, labels, capacity] of [
      ['gpu', 'gpu', '2'],
      ['plain', '', '3'],
    ] as const) {
      // One enrollment token each, so that revoking one ends one worker.
      const token =
        kind === 'gpu'
          ? { token: made.token, tokenId: made.tokenId }
          : ((await t.http().post(`/api/v0/worker-pools/${poolId}/enrollment-tokens`).set(owner.auth).send({ name: kind }).expect(201)).body as {
              token: string;
              id: string;
            });
      const dir = join(home, kind);
      mkdirSync(dir);
      writeFileSync(join(dir, 'token'), `${token.token}\n`, { mode: 0o600 });
      const dataDir = join(dir, 'data');
      const start = () =>
        startWorker(url, {
          WORKER_TOKEN_FILE: join(dir, 'token'),
          WORKER_DATA_DIR: dataDir,
          WORKER_CAPACITY_COMPUTERS: capacity,
          WORKER_LABELS: labels,
          LOCAL_SANDBOX: 'on',
          AGENT_MODEL_BASE_URL: '',
          AGENT_MODEL: '',
        });
      workers[kind] = { process: await start(), dataDir, tokenId: 'id' in token ? token.id : token.tokenId, start };
    }
  }, PROCESSES_TIMEOUT_MS);

  afterAll(async () => {
    for (const worker of Object.values(workers)) await worker.process?.killHard();
    await t.close();
    rmSync(home, { recursive: true, force: true });
  });

  const view = async (id: string): Promise<Body> => (await t.http().get(`/api/v0/computers/${id}`).set(owner.auth).expect(200)).body;
  const create = async (name: string, labels: string[] = []): Promise<{ id: string; token: string }> => {
    const created = await t.http().post('/api/v0/computers').set(owner.auth).send({ name, provider: 'local', pool: poolName, labels });
    expectStatus(created, 201);
    return { id: created.body.id as string, token: created.body.agentToken as string };
  };
  const activeOn = (id: string, kind: 'gpu' | 'plain') =>
    until(
      () => view(id),
      (c) => c.status === 'active' && c.runsOn.kind === 'worker' && existsSync(join(workers[kind].dataDir, 'computers', id)),
      `computer ${id} to be active on the ${kind} worker`,
    );
  const agentPolicy = (token: string) =>
    t
      .http()
      .get('/api/v0/agent/policy')
      .set({ Authorization: `Bearer ${token}` });
  const computers: Record<string, { id: string; token: string }> = {};

  itInSandbox(
    'places by labels and load: a gpu computer on the gpu worker, the others spread over the least loaded',
    async () => {
      computers.gpu = await create('needs-gpu', ['gpu']);
      await activeOn(computers.gpu.id, 'gpu');
      // The gpu worker holds one; the next goes to the other, which holds none.
      computers.plain = await create('any');
      await activeOn(computers.plain.id, 'plain');
      expect(existsSync(join(workers.gpu.dataDir, 'computers', computers.plain.id))).toBe(false);
      await theAgent(computers.gpu.id);
      await theAgent(computers.plain.id);
    },
    PROCESSES_TIMEOUT_MS,
  );

  itInSandbox(
    "kill -9: the worker's agents die with it; its computers wait for a worker with their labels, and come back on it with new tokens",
    async () => {
      const { id, token } = computers.gpu;
      const pid = await theAgent(id);
      const lostWorker = (await view(id)).runsOn.workerId as string;
      await workers.gpu.process.killHard();
      expect(await gone(pid)).toBe(true);
      // Lost after its lease; the only other worker lacks the label, so the computer waits.
      const waiting = await until(
        () => view(id),
        (c) => c.runsOn.kind === 'waiting',
        'the lost worker to give up its computer',
      );
      expect(waiting.status).toBe('provisioning');
      expectV0Error(await agentPolicy(token), 401, 'invalid_credentials');

      // Back (a new worker on the same folder): it removes what it held before, then provisions the computer again.
      workers.gpu.process = await workers.gpu.start();
      const back = await activeOn(id, 'gpu');
      expect(back.runsOn.workerId).not.toBe(lostWorker);
      // Its agent runs again, with the new token (the old one opens nothing).
      const again = await theAgent(id);
      expect(again).not.toBe(pid);
      expect(environmentOf(again).AGENT_TOKEN).toMatch(/^cpt_/);
      expect(environmentOf(again).AGENT_TOKEN).not.toBe(token);
    },
    PROCESSES_TIMEOUT_MS,
  );

  itInSandbox(
    'a worker whose enrollment token is revoked mid-run exits 1 with its disk cleaned; its computer goes to the other worker',
    async () => {
      const { id, token } = computers.plain;
      const pid = await theAgent(id);
      expectStatus(await t.http().delete(`/api/v0/worker-pools/${poolId}/enrollment-tokens/${workers.plain.tokenId}`).set(owner.auth), 200);
      expect(await workers.plain.process.exited()).toBe(1);
      expect(await gone(pid)).toBe(true);
      expect(existsSync(join(workers.plain.dataDir, 'computers', id))).toBe(false);
      expectV0Error(await agentPolicy(token), 401, 'invalid_credentials');
      // The gpu worker has room for a second, and this one asks for no label.
      await activeOn(id, 'gpu');
      // Never a token in any worker's output.
      for (const worker of Object.values(workers))
        for (const secret of [computers.gpu.token, computers.plain.token]) expect(worker.process.output()).not.toContain(secret);
    },
    PROCESSES_TIMEOUT_MS,
  );

  itInSandbox(
    "deleting a computer removes it from its worker's disk and stops its agent",
    async () => {
      const { id } = computers.plain;
      const pid = await theAgent(id);
      expectStatus(await t.http().delete(`/api/v0/computers/${id}`).set(owner.auth), 204);
      await until(
        () => existsSync(join(workers.gpu.dataDir, 'computers', id)) || existsSync(join(workers.gpu.dataDir, 'computers', '.agent-state', id)),
        (present) => !present,
        "the computer's folders to be removed",
      );
      expect(await gone(pid)).toBe(true);
    },
    PROCESSES_TIMEOUT_MS,
  );
});

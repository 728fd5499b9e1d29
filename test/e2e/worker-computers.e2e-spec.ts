import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { createGitRepo, reposRoot } from '../utils/git-fixtures';
import { Body, until } from '../utils/polling';
import { ancestorsOf, agentPids, environmentOf, gone, theAgent } from '../utils/process-state';
import { PROCESSES_TIMEOUT_MS, runNode, startWorker, WorkerProcess } from '../utils/processes';
import { describeInSandbox, itInSandbox } from '../utils/sandbox';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectStatus } from '../utils/v0-errors';
import { poolWithToken } from '../utils/workers';

/** The only addresses the organization's agents may reach: none of them the test's. */
const ALLOWED_IPS = ['203.0.113.0/24'];
/** The one loopback port the worker's operator lets sandboxes reach by name (OUTBOUND_ALLOWED_HOSTS). */
const ALLOWED_PORT = 4444;

/**
 * `agent-platform worker` running the managed computers placed on it: a real worker process, a real sandbox and real
 * agents, against the real app. The worker provisions a computer in its own data folder, runs its agent (which answers
 * a session through the worker's uplink), keeps its sandbox to the organization's network policy, and removes the
 * computer when it is deleted.
 */
describeInSandbox('A worker running its computers', () => {
  let t: TestApp;
  let owner: TestUser;
  let root: string;
  let repo: string;
  let worker: WorkerProcess;
  let dataDir: string;
  let home: string;
  let poolName: string;
  let pool: { id: string; tokenId: string };
  let start: () => Promise<WorkerProcess>;
  let computer: { id: string; token: string; pid: number };

  beforeAll(async () => {
    root = await reposRoot();
    repo = await createGitRepo(root, 'app');
    t = await startTestApp({ WORKER_LEASE_MS: '9000', WORKER_SWEEP_MS: '100', LOCAL_REPOS_DIR: root });
    owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    await t
      .http()
      .patch('/api/v0/organization/enterprise-controls')
      .set(owner.auth)
      .send({ settings: { networkPolicy: { allowedIps: ALLOWED_IPS } } })
      .expect(200);
    const made = await poolWithToken(t, owner);
    const { token } = made;
    pool = { id: made.pool.id as string, tokenId: made.tokenId };
    home = mkdtempSync(join(tmpdir(), 'ap-worker-computers-'));
    writeFileSync(join(home, 'token'), `${token}\n`, { mode: 0o600 });
    dataDir = join(home, 'data');
    const url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    start = () =>
      startWorker(url, {
        WORKER_TOKEN_FILE: join(home, 'token'),
        WORKER_DATA_DIR: dataDir,
        WORKER_CAPACITY_COMPUTERS: '2',
        LOCAL_SANDBOX: 'on',
        LOCAL_REPOS_DIR: root,
        // The operator's exception, on the worker as on a server: this name and port, and nothing else of the host.
        OUTBOUND_ALLOWED_HOSTS: `localhost:${ALLOWED_PORT}`,
        // No model: the agent answers with how to configure one (whatever the developer's shell has).
        AGENT_MODEL_BASE_URL: '',
        AGENT_MODEL: '',
      });
    worker = await start();
    poolName = made.pool.name as string;
  }, PROCESSES_TIMEOUT_MS);

  afterAll(async () => {
    await worker?.killHard();
    for (const pid of computer ? agentPids(computer.id) : []) process.kill(pid, 'SIGKILL');
    await t.close();
    rmSync(home, { recursive: true, force: true });
  });

  const view = async (id: string): Promise<Body> => (await t.http().get(`/api/v0/computers/${id}`).set(owner.auth).expect(200)).body;

  itInSandbox(
    'provisions a computer placed on it in its own data folder, runs its agent, which answers a session; the token never in its output',
    async () => {
      const created = await t
        .http()
        .post('/api/v0/computers')
        .set(owner.auth)
        .send({ name: 'on-a-worker', provider: 'local', pool: poolName, repos: [repo] });
      expectStatus(created, 201);
      const { id, agentToken } = created.body as { id: string; agentToken: string };
      const active = await until(
        () => view(id),
        (c) => c.status !== 'provisioning',
        'the computer to be provisioned by the worker',
      );
      expect(active).toMatchObject({ status: 'active', runsOn: { kind: 'worker' } });
      // Its workspace, with the repository cloned, is the worker's; the server's folder has nothing of it.
      const workspace = join(dataDir, 'computers', id);
      expect(existsSync(join(workspace, 'app', '.git'))).toBe(true);
      expect(existsSync(join(t.config.computersDir, id))).toBe(false);
      // What users see says nothing of the worker's folders.
      expect(JSON.stringify(active)).not.toContain(dataDir);

      const pid = await theAgent(id);
      expect(ancestorsOf(pid)).toContain(worker.child.pid);
      const agentEnv = environmentOf(pid);
      expect(agentEnv.AGENT_TOKEN).toBe(agentToken);
      // The server through the sandbox's bridge to the worker's uplink: no port of the worker's own.
      expect(agentEnv.AGENT_URL).toBe('http://127.0.0.1:8080');
      expect(agentEnv.AGENT_STATE_DIR).toBe(join(dataDir, 'computers', '.agent-state', id));
      computer = { id, token: agentToken, pid };

      const session = await t.http().post('/api/v0/sessions').set(owner.auth).send({ computerId: id });
      expectStatus(session, 201);
      const sessionId = session.body.sessionId as string;
      expectStatus(await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Add a README', computerId: id }), 200);
      await until(
        async () => (await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200)).body.status as string,
        (status) => status === 'idle',
        'the session to be answered',
      );
      const messages = (await t.http().get(`/api/v0/sessions/${sessionId}/messages?limit=100`).set(owner.auth).expect(200)).body.messages as Body[];
      expect(messages.some((m) => m.role === 'system' && /No model is configured/.test(m.content[0]?.text ?? ''))).toBe(true);
      for (const secret of [agentToken, agentToken.slice(4)]) expect(worker.output()).not.toContain(secret);
    },
    PROCESSES_TIMEOUT_MS,
  );

  itInSandbox(
    "keeps its agent's sandbox to the organization's networkPolicy: an address outside it, or a private one, is refused",
    async () => {
      expect(computer).toBeDefined();
      // From inside the agent's network namespace, through its sandbox's proxy (the only way out).
      const through = (target: string) =>
        execFileSync('nsenter', ['-t', String(computer.pid), '-n', 'curl', '-s', '-m', '10', '-x', 'http://127.0.0.1:3128', target], { encoding: 'utf8' });
      expect(through('http://1.1.1.1/')).toMatch(/outside the organization's allowed IPs \(networkPolicy\.allowedIps: 203\.0\.113\.0\/24\)/);
      expect(through('http://169.254.169.254/latest/meta-data/')).toMatch(/is a cloud metadata address/);
      // The worker's OUTBOUND_ALLOWED_HOSTS lifts the loopback rule for its one name and port, and no other; the
      // organization's list still binds what it lets through.
      expect(through(`http://localhost:${ALLOWED_PORT + 1}/`)).toMatch(/is a loopback name \(localhost\)/);
      expect(through(`http://localhost:${ALLOWED_PORT}/`)).toMatch(/outside the organization's allowed IPs/);
      await until(
        () => worker.output(),
        (output) => /security: sandbox\.egress_refused .*"host":"1\.1\.1\.1"/.test(output),
        "the refusal in the worker's security log",
      );
    },
    PROCESSES_TIMEOUT_MS,
  );

  itInSandbox(
    'deleting the computer stops its agent and removes its workspace and agent state from the worker',
    async () => {
      expect(computer).toBeDefined();
      expectStatus(await t.http().delete(`/api/v0/computers/${computer.id}`).set(owner.auth), 204);
      await until(
        () => [existsSync(join(dataDir, 'computers', computer.id)), existsSync(join(dataDir, 'computers', '.agent-state', computer.id))],
        (present) => !present[0] && !present[1],
        "the computer's folders to be removed",
      );
      expect(await gone(computer.pid)).toBe(true);
      expect(agentPids(computer.id)).toEqual([]);
    },
    PROCESSES_TIMEOUT_MS,
  );

  itInSandbox(
    "a step that cannot run on the worker fails saying so, on its worker's host rather than the server's",
    async () => {
      const php = await createGitRepo(root, 'php-app', { 'composer.json': '{}', 'composer.lock': '{}' });
      const created = await t
        .http()
        .post('/api/v0/computers')
        .set(owner.auth)
        .send({ name: 'php', provider: 'local', pool: poolName, repos: [php], autoInstallDeps: true });
      expectStatus(created, 201);
      const id = created.body.id as string;
      const failed = await until(
        () => view(id),
        (c) => c.status !== 'provisioning',
        'the install step to end',
      );
      expect(failed).toMatchObject({ status: 'error', runsOn: { kind: 'worker' } });
      expect(failed.provisioningSteps[2]).toMatchObject({
        id: 'install-dependencies',
        status: 'failed',
        error: "composer is not installed on its worker's host, so this step cannot run.",
      });
      expectStatus(await t.http().delete(`/api/v0/computers/${id}`).set(owner.auth), 204);
    },
    PROCESSES_TIMEOUT_MS,
  );

  itInSandbox(
    "SIGTERM stops its agents and leaves, its computers' folders kept; started again (a new worker), it removes them before taking work",
    async () => {
      const created = await t.http().post('/api/v0/computers').set(owner.auth).send({ name: 'kept', provider: 'local', pool: poolName });
      expectStatus(created, 201);
      const id = created.body.id as string;
      await until(
        () => view(id),
        (c) => c.status === 'active',
        'the computer to be provisioned',
      );
      const pid = await theAgent(id);
      expect(await worker.stop()).toBe(0);
      expect(await gone(pid)).toBe(true);
      const workspace = join(dataDir, 'computers', id);
      expect(existsSync(workspace)).toBe(true);
      const leftover = join(workspace, 'left-by-the-old-session');
      writeFileSync(leftover, 'x');

      // Its session was left: the worker that starts is a new one, which holds nothing the old one held. The computer,
      // placed again on it (the pool's only worker), may be provisioned afresh at once: the old workspace's file says
      // whether what the old session left was removed, where the folder alone could already be back.
      worker = await start();
      await until(
        () => existsSync(leftover),
        (present) => !present,
        "the old worker's computer to be removed",
      );
    },
    PROCESSES_TIMEOUT_MS,
  );

  itInSandbox(
    'once its session ends (its enrollment token revoked), kills its agents, removes every computer and its session, and exits 1',
    async () => {
      const created = await t.http().post('/api/v0/computers').set(owner.auth).send({ name: 'left-behind', provider: 'local', pool: poolName });
      expectStatus(created, 201);
      const id = created.body.id as string;
      await until(
        () => view(id),
        (c) => c.status === 'active',
        'the computer to be provisioned',
      );
      const pid = await theAgent(id);
      expectStatus(await t.http().delete(`/api/v0/worker-pools/${pool.id}/enrollment-tokens/${pool.tokenId}`).set(owner.auth), 200);
      expect(await worker.exited()).toBe(1);
      expect(worker.output()).toMatch(/ended this worker's session \(revoked\)/);
      expect(await gone(pid)).toBe(true);
      expect(existsSync(join(dataDir, 'computers', id))).toBe(false);
      expect(existsSync(join(dataDir, 'computers', '.agent-state', id))).toBe(false);
      expect(existsSync(join(dataDir, 'worker.json'))).toBe(false);
    },
    PROCESSES_TIMEOUT_MS,
  );
  it(
    'a worker whose host cannot make the sandbox refuses to start, saying why, and takes no computer',
    async () => {
      // A PATH with what a computer needs but bubblewrap: the sandbox cannot start, so the worker must not take work.
      const bin = mkdtempSync(join(tmpdir(), 'ap-worker-no-bwrap-'));
      for (const program of ['git', 'node', 'npm', 'sh', 'socat', 'prlimit', 'setpriv', 'chown', 'du', 'env']) {
        const found = execFileSync('sh', ['-c', `command -v ${program} || true`], { encoding: 'utf8' }).trim();
        if (found) symlinkSync(found, join(bin, program));
      }
      const made = await poolWithToken(t, owner);
      writeFileSync(join(home, 'token-2'), `${made.token}\n`, { mode: 0o600 });
      const created = await t.http().post('/api/v0/computers').set(owner.auth).send({ name: 'no-sandbox', provider: 'local', pool: made.pool.name });
      expectStatus(created, 201);
      try {
        const url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
        const run = await runNode('dist/worker/main.js', ['--url', url], {
          PATH: bin,
          WORKER_TOKEN_FILE: join(home, 'token-2'),
          WORKER_DATA_DIR: join(home, 'data-2'),
          LOCAL_SANDBOX: 'on',
        });
        expect(run.code).toBe(1);
        expect(run.stdout + run.stderr).toMatch(
          /this host cannot sandbox computers: bwrap is not installed \(Debian: apt-get install bubblewrap\)\. .*LOCAL_SANDBOX=off/,
        );
        // It never joined: the pool has no worker, and the computer still waits for one.
        expect((await t.http().get(`/api/v0/worker-pools/${made.pool.id}/workers`).set(owner.auth).expect(200)).body.workers).toEqual([]);
        expect(await view(created.body.id as string)).toMatchObject({ status: 'provisioning', runsOn: { kind: 'waiting' } });
        expect(existsSync(join(home, 'data-2', 'computers', created.body.id as string))).toBe(false);
      } finally {
        rmSync(bin, { recursive: true, force: true });
      }
    },
    PROCESSES_TIMEOUT_MS,
  );
});

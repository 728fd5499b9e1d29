import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/app-config';
import { Role } from '../../src/modules/auth';
import { openDatabase } from '../../src/platform/database/open-database';
import { SecretBox } from '../../src/platform/secrets/secret-box';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { api, Body, sleep, until } from '../utils/polling';
import { createGitRepo, reposRoot } from '../utils/git-fixtures';
import {
  agentPids,
  ancestorsOf,
  commandLineOf,
  commandLinesUnder,
  environmentOf,
  gone,
  pidNamespaceOf,
  running,
  theAgent,
  uidOf,
} from '../utils/process-state';
import { ServerProcess, startServer } from '../utils/processes';
import { startTestApp } from '../utils/test-app';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';

const TOKEN_SHAPE = /^cpt_[A-Za-z0-9_-]{43}$/;

/** A hook that holds each turn for a moment, so the session is seen running; it also shows the computer's own hooks file reaches its agent. */
const QUICK_HOOKS = JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'sleep 1.5' }] }] } });

/**
 * The server runs the reference agent of its managed `local` computers: the real server (from
 * dist) with LOCAL_AGENTS on, real agent processes, a real database read afterwards.
 */
describe('Local agents', () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let owner: TestUser;
  let server: ServerProcess;
  /** Every server the tests started (whose output is checked for tokens; stopped at the end if still running). */
  const servers: ServerProcess[] = [];
  /** Every agent token the tests saw, none of which may appear in any server's output. */
  const tokens: string[] = [];
  let home: string;
  /** A computer's own hooks, in its home (which its sandboxed agent reads, as `~/.agent-platform/settings.json`). */
  const writeHooks = (hooks: string, computerId = computer.id) => {
    const dir = join(database.dataDir, 'computers', computerId, '.home', '.agent-platform');
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, 'settings.json'), hooks, { mode: 0o644 });
    chmodSync(join(dir, 'settings.json'), 0o644);
  };
  let repo: string;
  let computer: { id: string; token: string; pid: number };
  let byomId: string;
  let deletedId: string;

  async function start(extra: Record<string, string> = {}): Promise<ServerProcess> {
    const started = await startServer([], { ...env, ...extra });
    servers.push(started);
    return started;
  }

  async function createComputer(body: Body): Promise<{ id: string; token: string }> {
    const created = await api(server.url, owner, 'POST', '/api/v0/computers', body);
    expect(created.status).toBe(201);
    expect(created.body.agentToken).toMatch(TOKEN_SHAPE);
    tokens.push(created.body.agentToken);
    return { id: created.body.id, token: created.body.agentToken };
  }

  /** A new session on the computer with one user message; the status the message left it in. */
  async function say(computerId: string, text: string): Promise<{ sessionId: string; status: string }> {
    const session = await api(server.url, owner, 'POST', '/api/v0/sessions', { computerId });
    expect(session.status).toBe(201);
    const message = await api(server.url, owner, 'POST', `/api/v0/sessions/${session.body.sessionId}/messages`, { text, computerId });
    expect(message.status).toBe(200);
    return { sessionId: session.body.sessionId, status: message.body.status };
  }

  /** The statuses the session goes through (each once, in order) until it is idle. */
  async function statusesUntilIdle(sessionId: string): Promise<string[]> {
    const seen: string[] = [];
    await until(
      async () => {
        const { status } = (await api(server.url, owner, 'GET', `/api/v0/sessions/${sessionId}`)).body;
        if (seen[seen.length - 1] !== status) seen.push(status);
        return status as string;
      },
      (status) => status === 'idle',
      `session ${sessionId} to be idle`,
    );
    return seen;
  }

  const messages = async (sessionId: string): Promise<Body[]> =>
    (await api(server.url, owner, 'GET', `/api/v0/sessions/${sessionId}/messages?limit=100`)).body.messages;

  const noModelAnswer = (all: Body[]) => all.find((m) => m.role === 'system' && /No model is configured.*AGENT_MODEL_BASE_URL/s.test(m.content[0]?.text ?? ''));

  beforeAll(async () => {
    database = await createTestDatabase();
    const root = await reposRoot();
    repo = await createGitRepo(root, 'app');
    home = mkdtempSync(join(tmpdir(), 'ap-local-agents-'));
    env = {
      ...database.env,
      LOCAL_REPOS_DIR: root,
      PROVISIONING_POLL_MS: '100',
      LOCAL_AGENTS: 'on',
      // An operator's hooks file is for agents run by hand: never read by the agents of organizations' computers.
      AGENT_HOOKS_FILE: join(home, 'shared-hooks.json'),
      // No model: the agent answers with how to configure one (whatever the developer's shell has).
      AGENT_MODEL_BASE_URL: '',
      AGENT_MODEL: '',
    };
    const setup = await startTestApp({ ...env, LOCAL_AGENTS: 'off' }, database);
    owner = await createUser(setup, Role.Owner, await createOrganization(setup, { messageHistory: true }));
    await setup.close();
    server = await start();
  });

  afterAll(async () => {
    for (const started of servers) await started.stop();
    await database.drop();
    rmSync(home, { recursive: true, force: true });
  });

  it('a managed local computer gets its agent once active: connected, its token in its environment, never on its command line', async () => {
    const created = await createComputer({ name: 'workspace', provider: 'local', repos: [repo] });
    const active = await until(
      () => api(server.url, owner, 'GET', `/api/v0/computers/${created.id}`),
      (r) => r.body.status !== 'provisioning',
      'the computer to be ready',
    );
    expect(active.body.status).toBe('active');
    const connected = await until(
      () => api(server.url, owner, 'GET', `/api/v0/computers/${created.id}`),
      (r) => r.body.hostname !== undefined,
      'the agent to connect',
    );
    expect(connected.body.hostname).toBe(hostname());
    const listed = (await api(server.url, owner, 'GET', '/api/v0/computers')).body.computers as Body[];
    expect(listed.find((c) => c.id === created.id)?.hostname).toBe(hostname());

    writeHooks(QUICK_HOOKS, created.id);
    const pid = await theAgent(created.id);
    // In its sandbox: under the server, as a uid of its own, in a PID namespace of its own.
    expect(ancestorsOf(pid)).toContain(server.child.pid);
    expect(uidOf(pid)).not.toBe(uidOf(server.child.pid!));
    expect(pidNamespaceOf(pid)).not.toBe(pidNamespaceOf(server.child.pid!));
    const args = commandLineOf(pid);
    const workspace = join(database.dataDir, 'computers', created.id);
    expect(args).toEqual(expect.arrayContaining(['--computer', created.id, '--workspace', workspace]));
    expect(args.join(' ')).not.toContain(created.token);
    const agentEnv = environmentOf(pid);
    expect(agentEnv.AGENT_TOKEN).toBe(created.token);
    // It reaches the server through its sandbox's bridge, at the server's own port on its loopback.
    expect(agentEnv.AGENT_URL).toBe(`http://127.0.0.1:${new URL(server.url).port}`);
    expect(agentEnv.HOME).toBe(join(workspace, '.home'));
    expect(agentEnv).not.toHaveProperty('AGENT_HOOKS_FILE');
    expect(agentEnv.AGENT_STATE_DIR).toBe(join(database.dataDir, 'computers', '.agent-state', created.id));
    expect(agentEnv.AGENT_STATE_DIR.startsWith(`${workspace}/`)).toBe(false);
    // None of the server's own settings reach the agent (and through it the commands a model runs).
    for (const name of ['DATABASE_URL', 'SECRETS_KEY', 'DATA_DIR', 'LOCAL_REPOS_DIR', 'LOCAL_AGENTS', 'PORT']) expect(agentEnv).not.toHaveProperty(name);
    computer = { ...created, pid };

    // A BYOM computer gets no agent from the server.
    byomId = (await createComputer({ name: 'laptop', provider: 'byom', hostId: '0b4f8a3e-3c55-4d0c-8d0e-2f4b8b1b9a11', remoteUser: 'dev' })).id;
    await sleep(1_000);
    expect(agentPids(byomId)).toEqual([]);
  });

  it("the agent takes a session's message: pending, then running, then idle, answered with how to configure a model", async () => {
    const { sessionId, status } = await say(computer.id, 'Add a README');
    expect(status).toBe('pending');
    const statuses = await statusesUntilIdle(sessionId);
    expect(statuses.filter((s) => s !== 'pending')).toEqual(['running', 'idle']);
    const all = await messages(sessionId);
    expect(all[0]).toMatchObject({ role: 'user' });
    expect(noModelAnswer(all)).toBeDefined();
    // The hook ran (the computer's own hooks file), in the sandbox, and is recorded on the session.
    expect(all.some((m) => m.hookEventName === 'UserPromptSubmit')).toBe(true);
  });

  it('an agent that dies is started again', async () => {
    process.kill(computer.pid, 'SIGKILL');
    expect(await gone(computer.pid)).toBe(true);
    const pid = await until(
      () => agentPids(computer.id),
      (pids) => pids.length === 1 && pids[0] !== computer.pid,
      'a new agent',
    );
    expect(environmentOf(pid[0]).AGENT_TOKEN).toBe(computer.token);
    computer.pid = pid[0];
  });

  it('rotating the token restarts the agent with the new token, which it connects and works with', async () => {
    const rotated = await api(server.url, owner, 'POST', `/api/v0/computers/${computer.id}/agent-token`);
    expect(rotated.body.agentToken).toMatch(TOKEN_SHAPE);
    tokens.push(rotated.body.agentToken);
    // The one agent left holds the new token. (Under load the search can meet a process as it exits, whose
    // environment reads empty: CI saw AGENT_TOKEN undefined once.)
    const [pid] = await until(
      () => agentPids(computer.id),
      (pids) => pids.length === 1 && pids[0] !== computer.pid && environmentOf(pids[0]).AGENT_TOKEN === rotated.body.agentToken,
      'the agent to restart with the new token',
    );
    expect(running(computer.pid)).toBe(false);
    const old = await fetch(`${server.url}/api/v0/agent/connect`, {
      method: 'POST',
      headers: { authorization: `Bearer ${computer.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ hostname: 'old' }),
    });
    expect(old.status).toBe(401);
    computer = { ...computer, token: rotated.body.agentToken, pid };

    // Only an agent holding the new token can take this work.
    const { sessionId } = await say(computer.id, 'Still there?');
    await statusesUntilIdle(sessionId);
    expect(noModelAnswer(await messages(sessionId))).toBeDefined();
    expect(agentPids(computer.id)).toEqual([pid]);
  });

  it("deleting a computer stops its agent at once and removes its workspace and the agent's files", async () => {
    const created = await createComputer({ name: 'doomed', provider: 'local' });
    await until(
      () => api(server.url, owner, 'GET', `/api/v0/computers/${created.id}`),
      (r) => r.body.hostname !== undefined,
      'the agent to connect',
    );
    const pid = await theAgent(created.id);
    const stateDir = environmentOf(pid).AGENT_STATE_DIR;
    expect(existsSync(stateDir)).toBe(true);

    expect((await api(server.url, owner, 'DELETE', `/api/v0/computers/${created.id}`)).status).toBe(204);
    expect(await gone(pid)).toBe(true);
    expect(existsSync(join(database.dataDir, 'computers', created.id))).toBe(false);
    expect(existsSync(stateDir)).toBe(false);
    await sleep(2_000);
    expect(agentPids(created.id)).toEqual([]);
    // The other computer's agent was left alone.
    expect(agentPids(computer.id)).toEqual([computer.pid]);
    deletedId = created.id;
  });

  it('a server killed without warning leaves no agent behind, even a busy one, and the next one starts it again', async () => {
    // Busy and silent when its server dies (a 30 s hook): no write of its own to the dead server's pipe would make it fail.
    writeHooks(JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'sleep 30' }] }] } }));
    const { sessionId } = await say(computer.id, 'Take your time');
    await until(
      async () => (await api(server.url, owner, 'GET', `/api/v0/sessions/${sessionId}`)).body.status,
      (status) => status === 'running',
      'the turn to start',
    );
    // Killed while the agent runs the hook (its `sleep 30`), not before it got there.
    await until(
      () => commandLinesUnder(computer.pid).some(([command, seconds]) => command === 'sleep' && seconds === '30'),
      Boolean,
      'the agent to run its hook',
    );
    server.child.kill('SIGKILL');
    await until(
      () => server.child.exitCode !== null || server.child.signalCode !== null,
      (done) => done,
      'the server to die',
    );
    try {
      await until(
        () => running(computer.pid),
        (alive) => !alive,
        'the orphaned agent to stop',
        5_000,
      );
    } finally {
      writeHooks(QUICK_HOOKS);
    }

    server = await start();
    // Waited for with its token: under load the search can meet an agent as it exits (its environment reads empty).
    const [pid] = await until(
      () => agentPids(computer.id).filter((candidate) => environmentOf(candidate).AGENT_TOKEN === computer.token),
      (pids) => pids.length === 1,
      'the agent to start with the new server',
    );
    expect(ancestorsOf(pid)).toContain(server.child.pid);
    computer.pid = pid;
  });

  it("stopping the server stops its agents; no token ever appears in the server's output", async () => {
    expect(await server.stop()).toBe(0);
    expect(await gone(computer.pid)).toBe(true);
    expect(agentPids(computer.id)).toEqual([]);
    const output = servers.map((started) => started.output()).join('\n');
    // The agents' output did reach the server's log, prefixed with their computer.
    expect(output).toContain(`[computer ${computer.id}]`);
    expect(output).toMatch(/connected as /);
    expect(tokens.length).toBe(4);
    for (const token of tokens) {
      expect(output).not.toContain(token);
      expect(output).not.toContain(token.slice(4));
    }
  });

  it("the stored token is an envelope that only the computer's own context decrypts; BYOM computers store none", async () => {
    const config = loadConfig(database.env);
    const db = await openDatabase(config);
    try {
      const rows = (await db.dataSource.query(`SELECT id, agent_token_encrypted, row_to_json(c)::text AS everything FROM computers c WHERE id = ANY($1)`, [
        [computer.id, byomId, deletedId],
      ])) as Array<{ id: string; agent_token_encrypted: string | null; everything: string }>;
      const local = rows.find((r) => r.id === computer.id)!;
      expect(local.agent_token_encrypted).toMatch(/^enc:v1:[0-9a-f]{16}:[A-Za-z0-9_-]+$/);
      for (const token of tokens) expect(local.everything).not.toContain(token.slice(4));
      const box = new SecretBox(config);
      expect(box.decrypt(local.agent_token_encrypted!, `computer-agent-token:${computer.id}`)).toBe(computer.token);
      expect(() => box.decrypt(local.agent_token_encrypted!, `computer-agent-token:${byomId}`)).toThrow();
      expect(rows.find((r) => r.id === byomId)!.agent_token_encrypted).toBeNull();
      expect(rows.find((r) => r.id === deletedId)).toBeUndefined();
    } finally {
      await db.close();
    }
  });

  it('with LOCAL_AGENTS=off the server starts no agent', async () => {
    server = await start({ LOCAL_AGENTS: 'off' });
    await sleep(6_000);
    expect(agentPids(computer.id)).toEqual([]);
    expect(await server.stop()).toBe(0);
  });

  (serverUrl() ? it : it.skip)(
    'on several instances sharing PostgreSQL, one runs each agent; when it dies another takes the agent over',
    async () => {
      const first = await start();
      const second = await start();
      server = first;
      try {
        const pid = await theAgent(computer.id);
        const runner = ancestorsOf(pid).includes(first.child.pid!) ? first : second;
        expect(ancestorsOf(pid)).toContain(runner.child.pid);
        // Both instances look at the computers every 5 s: still one agent after both have looked again.
        await sleep(6_000);
        expect(agentPids(computer.id)).toEqual([pid]);

        const survivor = runner === first ? second : first;
        runner.child.kill('SIGKILL');
        await until(
          () => running(pid),
          (alive) => !alive,
          "the dead instance's agent to stop",
          5_000,
        );
        const next = await theAgent(computer.id, 'the other instance to take the agent over');
        expect(ancestorsOf(next)).toContain(survivor.child.pid);
        server = survivor;
        await sleep(6_000);
        expect(agentPids(computer.id)).toEqual([next]);
      } finally {
        await first.stop();
        await second.stop();
      }
    },
    90_000,
  );
});

import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { api, Body, until } from '../utils/polling';
import { createGitRepo, npmProject, reposRoot } from '../utils/git-fixtures';
import { startServer, ServerProcess } from '../utils/processes';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase, TestDatabase } from '../utils/test-database';

/** What the server's own process holds and nothing run for a computer may see. */
const CANARY = 'AP_TEST_SERVER_SECRET';

/**
 * Escapes from a managed computer's provisioning, attempted the way a member would: with what a
 * repository may hold (package-manager configuration, scripts), trying to run a program of its
 * choosing or to read the server's environment.
 */
describe('Escapes from a managed computer: its dependency install', () => {
  let root: string;

  beforeAll(async () => {
    root = await reposRoot();
    process.env[CANARY] = `canary-${randomUUID()}`;
  });

  afterAll(() => {
    delete process.env[CANARY];
  });

  async function provision(t: TestApp, member: TestUser, repo: string): Promise<Body> {
    const base = await t.app.getUrl();
    const created = await api(base, member, 'POST', '/api/v0/computers', {
      name: `c-${randomUUID().slice(0, 6)}`,
      provider: 'local',
      repos: [repo],
      autoInstallDeps: true,
    });
    expect(created.status).toBe(201);
    const done = await until(
      () => api(base, member, 'GET', `/api/v0/computers/${created.body.id}`),
      (r) => r.body.status !== 'provisioning',
      'provisioning to end',
    );
    return done.body;
  }

  it('an .npmrc naming a git of its own (`git=./gitwrap`) does not get it run, even with scripts off', async () => {
    const marker = join(tmpdir(), `ap-gitwrap-${randomUUID()}`);
    const name = `npmrc-${randomUUID().slice(0, 6)}`;
    const lock = {
      name,
      version: '1.0.0',
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name, version: '1.0.0', dependencies: { dep: 'git+https://example.invalid/dep.git' } },
        'node_modules/dep': { version: '1.0.0', resolved: 'git+https://example.invalid/dep.git#0123456789abcdef0123456789abcdef01234567' },
      },
    };
    const repo = await createGitRepo(root, name, {
      '.npmrc': 'git=./gitwrap\n',
      gitwrap: `#!/bin/sh\nenv > '${marker}'\nexit 1\n`,
      'package.json': JSON.stringify({ name, version: '1.0.0', private: true, dependencies: { dep: 'git+https://example.invalid/dep.git' } }),
      'package-lock.json': JSON.stringify(lock),
    });
    await import('node:fs/promises').then((fs) => fs.chmod(join(repo, 'gitwrap'), 0o755));
    const { execFileSync } = await import('node:child_process');
    execFileSync('git', ['-c', 'user.email=t@example.test', '-c', 'user.name=T', 'commit', '-qam', 'exec bit'], { cwd: repo });

    const t = await startTestApp({ LOCAL_REPOS_DIR: root, PROVISIONING_STEP_TIMEOUT_MS: '60000' });
    try {
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const computer = await provision(t, member, repo);
      // The install fails (the dependency cannot be fetched), and the repository's program never ran.
      expect(computer.status).toBe('error');
      expect(existsSync(marker)).toBe(false);
    } finally {
      await t.close();
    }
  });

  it('an install script sees an environment built from an allowlist, with a home inside the workspace: nothing of the server’s', async () => {
    const name = `env-${randomUUID().slice(0, 6)}`;
    const dump = "node -e \"require('fs').writeFileSync('seen-env.json', JSON.stringify(process.env))\"";
    const pkg = { name, version: '1.0.0', private: true, scripts: { postinstall: dump } };
    const lock = { name, version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name, version: '1.0.0' } } };
    const repo = await createGitRepo(root, name, { 'package.json': JSON.stringify(pkg), 'package-lock.json': JSON.stringify(lock) });

    const t = await startTestApp({ LOCAL_REPOS_DIR: root, LOCAL_INSTALL_SCRIPTS: 'true', PROVISIONING_STEP_TIMEOUT_MS: '60000' });
    try {
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const computer = await provision(t, member, repo);
      expect(computer.status).toBe('active');
      const workspace = join(t.config.computersDir, computer.id as string);
      const seen = JSON.parse(await readFile(join(workspace, name, 'seen-env.json'), 'utf8')) as Record<string, string>;
      expect(seen[CANARY]).toBeUndefined();
      for (const secret of ['JWT_SECRET', 'DATABASE_URL', 'SECRETS_KEY', 'TEST_DATABASE_URL', 'NODE_OPTIONS']) expect(seen[secret]).toBeUndefined();
      expect(seen.HOME.startsWith(workspace)).toBe(true);
      // The package managers' executables are pinned, whatever a repository's configuration says.
      expect(seen.npm_config_git).toMatch(/^\/.*git$/);
      expect(seen.npm_config_script_shell).toBe('/bin/sh');
    } finally {
      await t.close();
    }
  });
});

/** The attempts every escape test makes (test/fixtures/escape-attempts.js), written into the computer for it to run. */
const ESCAPE_SCRIPT = readFileSync(join(__dirname, '..', 'fixtures', 'escape-attempts.js'), 'utf8');

interface EscapeReport {
  uid: number;
  reads: Record<string, string>;
  listings: Record<string, string[] | string>;
  writes: Record<string, string>;
  environs: Record<string, string>;
  canaryInOwnEnvironment: boolean;
  ownEnvironment: string[];
  tcp: Record<string, string>;
  proxy: Record<string, string>;
  forks?: { started: number; refused: number };
}

/** The database's address when it listens on TCP (PostgreSQL; PGlite's socket lives in a folder no sandbox sees). */
function databasePortOf(url: string | undefined): Array<[string, number]> {
  return url ? [[new URL(url).hostname, Number(new URL(url).port || 5432)]] : [];
}

/** A service on the host's loopback (a database, an admin port) that counts who connects to it. */
async function hostService(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, connections: () => connections, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** What an attacker inside a computer goes for: the server's data, secrets and environment, another computer, the host. */
function targetsFor(
  t: { dataDir: string; computersDir: string },
  victimWorkspace: string,
  hostCanaryFile: string,
  reposDir: string,
  tcp: Array<[string, number]>,
) {
  return {
    canary: process.env[CANARY],
    read: [
      join(t.dataDir, 'secrets.key'),
      join(t.dataDir, 'canary.txt'),
      join(victimWorkspace, 'secret.txt'),
      hostCanaryFile,
      `/proc/${process.pid}/environ`,
      '/proc/1/environ',
      '/etc/shadow',
      join(__dirname, '..', '..', 'package.json'),
    ],
    list: [t.dataDir, t.computersDir, victimWorkspace, join(__dirname, '..', '..')],
    write: [
      join(t.dataDir, 'escaped.txt'),
      join(victimWorkspace, 'escaped.txt'),
      join(reposDir, 'escaped.txt'),
      join(dirname(hostCanaryFile), 'escaped.txt'),
      '/usr/escaped.txt',
      '/etc/escaped.txt',
    ],
    tcp,
  };
}

/** Everything the report must show: nothing read, listed, written or reached, and no secret seen. */
function expectConfined(report: EscapeReport, targets: ReturnType<typeof targetsFor>, victimId: string): void {
  for (const [path, got] of Object.entries(report.reads)) expect({ path, got: got.startsWith('ERR:') ? 'refused' : got }).toEqual({ path, got: 'refused' });
  for (const [path, got] of Object.entries(report.listings)) {
    // A folder above the computer's own (its parents are made for it, empty but for the way to it) may be listed.
    if (Array.isArray(got))
      expect({ path, got: got.filter((name) => name === victimId || name === 'secrets.key' || name === 'canary.txt' || name === 'src') }).toEqual({
        path,
        got: [],
      });
  }
  for (const [path, got] of Object.entries(report.writes)) expect({ path, got: got.startsWith('ERR:') ? 'refused' : got }).toEqual({ path, got: 'refused' });
  for (const path of targets.write) expect({ path, exists: existsSync(path) }).toEqual({ path, exists: false });
  expect(Object.values(report.environs)).not.toContain('CANARY');
  expect(report.canaryInOwnEnvironment).toBe(false);
  // Its own PID namespace: a handful of its own processes, none of the server's.
  expect(Object.keys(report.environs).length).toBeLessThan(10);
  expect(report.uid).not.toBe(0);
  for (const [target, got] of Object.entries(report.tcp))
    expect({ target, got: got === 'CONNECTED' ? 'reached' : 'refused' }).toEqual({ target, got: 'refused' });
  for (const [target, got] of Object.entries(report.proxy)) expect({ target, got }).toEqual({ target, got: '403' });
}

describe('Escapes from a managed computer: its sandbox', () => {
  let root: string;
  let hostDir: string;
  let service: Awaited<ReturnType<typeof hostService>>;

  beforeAll(async () => {
    root = await reposRoot();
    process.env[CANARY] = `canary-${randomUUID()}`;
    // Readable by every user of the host: only the sandbox's mounts keep it out.
    hostDir = mkdtempSync(join(tmpdir(), 'ap-host-'));
    chmodSync(hostDir, 0o755);
    writeFileSync(join(hostDir, 'canary.txt'), process.env[CANARY]!, { mode: 0o644 });
    chmodSync(join(hostDir, 'canary.txt'), 0o644);
    service = await hostService();
  });

  afterAll(async () => {
    delete process.env[CANARY];
    rmSync(hostDir, { recursive: true, force: true });
    await service.close();
  });

  async function provision(base: string, member: TestUser, repos: string[]): Promise<Body> {
    const created = await api(base, member, 'POST', '/api/v0/computers', {
      name: `c-${randomUUID().slice(0, 6)}`,
      provider: 'local',
      repos,
      autoInstallDeps: true,
    });
    expect(created.status).toBe(201);
    return (
      await until(
        () => api(base, member, 'GET', `/api/v0/computers/${created.body.id}`),
        (r) => r.body.status !== 'provisioning',
        'provisioning to end',
        60_000,
      )
    ).body;
  }

  /** A computer holding a secret of its own, readable by every user of the host. */
  async function victimOf(t: TestApp, member: TestUser): Promise<{ id: string; workspace: string }> {
    const victim = await provision(await t.app.getUrl(), member, [await createGitRepo(root, `victim-${randomUUID().slice(0, 6)}`)]);
    expect(victim.status).toBe('active');
    const workspace = join(t.config.computersDir, victim.id as string);
    writeFileSync(join(workspace, 'secret.txt'), 'the victim computer secret', { mode: 0o644 });
    chmodSync(join(workspace, 'secret.txt'), 0o644);
    return { id: victim.id as string, workspace };
  }

  it('an install script reads, lists, writes and reaches nothing of the server, its host or another computer; forks are bounded; all keep working', async () => {
    const t = await startTestApp({
      LOCAL_REPOS_DIR: root,
      LOCAL_INSTALL_SCRIPTS: 'true',
      PROVISIONING_STEP_TIMEOUT_MS: '60000',
      LOCAL_SANDBOX_PROCESSES: '64',
    });
    try {
      writeFileSync(join(t.config.dataDir, 'canary.txt'), 'the server data', { mode: 0o644 });
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const victim = await victimOf(t, member);
      const targets = {
        ...targetsFor(t.config, victim.workspace, join(hostDir, 'canary.txt'), root, [['127.0.0.1', service.port], ...databasePortOf(t.config.DATABASE_URL)]),
        forks: 200,
      };
      const name = `attacker-${randomUUID().slice(0, 6)}`;
      const repo = await createGitRepo(root, name, {
        ...npmProject(name, 'node escape.js'),
        'escape.js': ESCAPE_SCRIPT,
        'targets.json': JSON.stringify(targets),
      });

      const attacker = await provision(await t.app.getUrl(), member, [repo]);
      expect(attacker.status).toBe('active');
      const report = JSON.parse(await readFile(join(t.config.computersDir, attacker.id as string, name, 'report.json'), 'utf8')) as EscapeReport;
      expectConfined(report, targets, victim.id);
      // Forking stops at LOCAL_SANDBOX_PROCESSES (this uid's processes: the install's own count too).
      expect(report.forks!.started).toBeLessThan(64);
      expect(report.forks!.refused).toBeGreaterThan(0);
      expect(service.connections()).toBe(0);
      // The server, the victim and the attacker's own computer keep working.
      expect((await t.http().get('/healthz')).status).toBe(200);
      expect((await api(await t.app.getUrl(), member, 'GET', `/api/v0/computers/${victim.id}`)).body.status).toBe('active');
      expect(readFileSync(join(victim.workspace, 'secret.txt'), 'utf8')).toBe('the victim computer secret');
    } finally {
      await t.close();
    }
  });

  it('a link planted where the computer’s home was is removed, not followed, by the server that runs as root', async () => {
    const t = await startTestApp({ LOCAL_REPOS_DIR: root, LOCAL_INSTALL_SCRIPTS: 'true', PROVISIONING_STEP_TIMEOUT_MS: '60000' });
    try {
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const planted = join(hostDir, `planted-${randomUUID().slice(0, 6)}`);
      // The first repo's install swaps the computer's temporary folder for a link to a host path; the second repo's
      // install makes the server prepare that folder again.
      const plant = `node -e "const fs = require('fs'); fs.rmSync('../.home/tmp', { recursive: true }); fs.symlinkSync('${planted}', '../.home/tmp')"`;
      const first = `plant-${randomUUID().slice(0, 6)}`;
      const second = `after-${randomUUID().slice(0, 6)}`;
      const computer = await provision(await t.app.getUrl(), member, [
        await createGitRepo(root, first, npmProject(first, plant)),
        await createGitRepo(root, second, npmProject(second)),
      ]);
      expect(computer.status).toBe('active');
      expect(existsSync(planted)).toBe(false);
      expect(lstatSync(join(t.config.computersDir, computer.id as string, '.home', 'tmp')).isDirectory()).toBe(true);
    } finally {
      await t.close();
    }
  });

  it('an install that fills the disk is stopped at LOCAL_WORKSPACE_MAX_MB: the step fails saying so, and the server keeps working', async () => {
    const t = await startTestApp({ LOCAL_REPOS_DIR: root, LOCAL_INSTALL_SCRIPTS: 'true', PROVISIONING_STEP_TIMEOUT_MS: '60000', LOCAL_WORKSPACE_MAX_MB: '20' });
    try {
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const name = `filler-${randomUUID().slice(0, 6)}`;
      // 4 MiB every 100 ms, in files of their own (each under the per-file limit), up to 400 MiB.
      const fill = `node -e "const fs = require('fs'); let i = 0; const t = setInterval(() => { fs.writeFileSync('fill-' + i, Buffer.alloc(4 << 20, 1)); if (++i === 100) clearInterval(t); }, 100)"`;
      const computer = await provision(await t.app.getUrl(), member, [await createGitRepo(root, name, npmProject(name, fill))]);
      expect(computer.status).toBe('error');
      const install = (computer.provisioningSteps as Body[]).find((step) => step.id === 'install-dependencies')!;
      expect(install.error).toMatch(/grew past its limit of 20 MiB \(LOCAL_WORKSPACE_MAX_MB\)/);
      const written = readdirSync(join(t.config.computersDir, computer.id as string, name)).filter((file) => file.startsWith('fill-')).length;
      expect(written).toBeLessThan(100);
      expect((await t.http().get('/healthz')).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

/** An OpenAI-compatible model on loopback that answers a prompt with one Execute call, and its result with a last word. */
async function scriptedModel(command: string): Promise<{ url: string; calls: () => number; close: () => Promise<void> }> {
  let calls = 0;
  const server = createHttpServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      calls++;
      const messages = (JSON.parse(body) as { messages: Array<{ role: string }> }).messages;
      const message =
        messages[messages.length - 1].role === 'user'
          ? {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'Execute', arguments: JSON.stringify({ command }) } }],
            }
          : { role: 'assistant', content: 'Done.' };
      response.setHeader('content-type', 'application/json');
      response.end(
        JSON.stringify({
          id: 'c',
          object: 'chat.completion',
          choices: [{ index: 0, finish_reason: 'tool_calls' in message ? 'tool_calls' : 'stop', message }],
          usage: { prompt_tokens: 1, completion_tokens: 1 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    calls: () => calls,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('Escapes from a managed computer: a hook and a tool call of its server-run agent', () => {
  let root: string;
  let database: TestDatabase;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    root = await reposRoot();
    process.env[CANARY] = `canary-${randomUUID()}`;
    database = await createTestDatabase();
  });

  afterAll(async () => {
    delete process.env[CANARY];
    await server?.stop();
    await database.drop();
  });

  it('run in the computer’s sandbox: the server’s secrets, data and environment, another computer and the host stay out of reach', async () => {
    const env = {
      ...database.env,
      LOCAL_REPOS_DIR: root,
      PROVISIONING_POLL_MS: '100',
      AGENT_MODEL_BASE_URL: '',
      AGENT_MODEL: '',
      MODEL_RELAY_ALLOWED_HOSTS: '127.0.0.1',
      [CANARY]: process.env[CANARY]!,
    };
    const setup = await startTestApp({ ...env, LOCAL_AGENTS: 'off' }, database);
    let member: TestUser;
    let victim: { id: string; workspace: string };
    // The organization's model, scripted: its one tool call runs the escape attempts (the folder is made below).
    const model = await scriptedModel(`node escape.js "$PWD/tool-run"`);
    try {
      const organization = await createOrganization(setup, { messageHistory: true });
      member = await createUser(setup, Role.Member, organization);
      const owner = await createUser(setup, Role.Owner, organization);
      const customModels = [{ id: 'scripted', model: 'scripted-1', baseUrl: model.url, apiKey: 'scripted-key' }];
      await setup.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).send({ settings: { customModels } }).expect(200);
      const base = await setup.app.getUrl();
      const made = await api(base, member, 'POST', '/api/v0/computers', { name: 'victim', provider: 'local', repos: [await createGitRepo(root, 'victim')] });
      const done = await until(
        () => api(base, member, 'GET', `/api/v0/computers/${made.body.id}`),
        (r) => r.body.status !== 'provisioning',
        'the victim',
      );
      expect(done.body.status).toBe('active');
      victim = { id: made.body.id as string, workspace: join(setup.config.computersDir, made.body.id as string) };
      writeFileSync(join(victim.workspace, 'secret.txt'), 'the victim computer secret', { mode: 0o644 });
      chmodSync(join(victim.workspace, 'secret.txt'), 0o644);
      writeFileSync(join(setup.config.dataDir, 'canary.txt'), 'the server data', { mode: 0o644 });
    } finally {
      await setup.close();
    }

    server = await startServer([], { ...env, LOCAL_AGENTS: 'on' });
    const created = await api(server.url, member, 'POST', '/api/v0/computers', {
      name: 'attacker',
      provider: 'local',
      repos: [await createGitRepo(root, 'attacker')],
    });
    expect(created.status).toBe(201);
    await until(
      () => api(server!.url, member, 'GET', `/api/v0/computers/${created.body.id}`),
      (r) => r.body.status === 'active',
      'the attacker computer',
    );
    const config = { dataDir: database.dataDir, computersDir: join(database.dataDir, 'computers') };
    const workspace = join(config.computersDir, created.body.id as string);
    // What the member puts in their own computer: a hook that runs the escape attempts at every prompt.
    const hostDir = mkdtempSync(join(tmpdir(), 'ap-host-'));
    chmodSync(hostDir, 0o755);
    writeFileSync(join(hostDir, 'canary.txt'), process.env[CANARY]!, { mode: 0o644 });
    chmodSync(join(hostDir, 'canary.txt'), 0o644);
    const targets = targetsFor(config, victim.workspace, join(hostDir, 'canary.txt'), root, databasePortOf(database.env.DATABASE_URL));
    const run = join(workspace, 'hook-run');
    for (const dir of [run, join(workspace, '.home', '.agent-platform')]) {
      mkdirSync(dir, { recursive: true });
      chmodSync(dir, 0o777);
    }
    writeFileSync(join(run, 'targets.json'), JSON.stringify(targets), { mode: 0o644 });
    writeFileSync(join(run, 'escape.js'), ESCAPE_SCRIPT, { mode: 0o644 });
    // The tool call runs in the workspace (its cwd): the script there, its report in tool-run/.
    const tools = join(workspace, 'tool-run');
    mkdirSync(tools);
    chmodSync(tools, 0o777);
    writeFileSync(join(tools, 'targets.json'), JSON.stringify(targets), { mode: 0o644 });
    writeFileSync(join(workspace, 'escape.js'), ESCAPE_SCRIPT, { mode: 0o644 });
    chmodSync(join(tools, 'targets.json'), 0o644);
    chmodSync(join(workspace, 'escape.js'), 0o644);
    const hooks = { hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: `node ${join(run, 'escape.js')} ${run}`, timeout: 30 }] }] } };
    writeFileSync(join(workspace, '.home', '.agent-platform', 'settings.json'), JSON.stringify(hooks), { mode: 0o644 });
    for (const file of ['targets.json', 'escape.js']) chmodSync(join(run, file), 0o644);
    chmodSync(join(workspace, '.home', '.agent-platform', 'settings.json'), 0o644);

    try {
      const session = await api(server.url, member, 'POST', '/api/v0/sessions', { computerId: created.body.id });
      expect(session.status).toBe(201);
      await api(server.url, member, 'POST', `/api/v0/sessions/${session.body.sessionId}/messages`, { text: 'hello', computerId: created.body.id });
      for (const [folder, what] of [
        [run, 'the hook'],
        [tools, 'the tool call'],
      ]) {
        await until(
          async () => existsSync(join(folder, 'report.json')),
          (made) => made,
          `${what} to report`,
          30_000,
        );
        const report = JSON.parse(readFileSync(join(folder, 'report.json'), 'utf8')) as EscapeReport;
        expectConfined(report, targets, victim.id);
        // The agent's token is its own to hold; the server's settings are not there.
        expect(report.ownEnvironment).not.toEqual(expect.arrayContaining(['DATABASE_URL']));
      }
      expect(model.calls()).toBeGreaterThanOrEqual(1);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      expect(readFileSync(join(victim.workspace, 'secret.txt'), 'utf8')).toBe('the victim computer secret');
    } finally {
      rmSync(hostDir, { recursive: true, force: true });
      await model.close();
    }
  });
});

describe('The organization’s sandbox for a server-run agent', () => {
  it('nests in the computer’s: the agent’s command runs, writes its workspace, and nothing the organization’s sandbox forbids', async () => {
    const root = await reposRoot();
    const database = await createTestDatabase();
    const command = 'echo nested > nested.txt && { echo x > /tmp/outside.txt && echo wrote > outside-written.txt || echo refused > outside-refused.txt; }';
    const model = await scriptedModel(command);
    const env = {
      ...database.env,
      LOCAL_REPOS_DIR: root,
      PROVISIONING_POLL_MS: '100',
      AGENT_MODEL_BASE_URL: '',
      AGENT_MODEL: '',
      MODEL_RELAY_ALLOWED_HOSTS: '127.0.0.1',
    };
    let server: ServerProcess | undefined;
    try {
      const setup = await startTestApp({ ...env, LOCAL_AGENTS: 'off' }, database);
      const owner = await createUser(setup, Role.Owner, await createOrganization(setup, { messageHistory: true }));
      const settings = { customModels: [{ id: 'scripted', model: 'scripted-1', baseUrl: model.url, apiKey: 'scripted-key' }], sandbox: { enabled: true } };
      await setup.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).send({ settings }).expect(200);
      await setup.close();

      server = await startServer([], { ...env, LOCAL_AGENTS: 'on' });
      const created = await api(server.url, owner, 'POST', '/api/v0/computers', {
        name: 'nested',
        provider: 'local',
        repos: [await createGitRepo(root, 'nested')],
      });
      await until(
        () => api(server!.url, owner, 'GET', `/api/v0/computers/${created.body.id}`),
        (r) => r.body.status === 'active',
        'the computer',
      );
      const workspace = join(database.dataDir, 'computers', created.body.id as string);
      const session = await api(server.url, owner, 'POST', '/api/v0/sessions', { computerId: created.body.id });
      await api(server.url, owner, 'POST', `/api/v0/sessions/${session.body.sessionId}/messages`, { text: 'go', computerId: created.body.id });
      await until(
        async () => existsSync(join(workspace, 'nested.txt')) && existsSync(join(workspace, 'outside-refused.txt')),
        (done) => done,
        'the nested command',
        30_000,
      );
      expect(existsSync(join(workspace, 'outside-written.txt'))).toBe(false);
    } finally {
      await server?.stop();
      await model.close();
      await database.drop();
    }
  });
});

describe('A host that cannot make the sandbox', () => {
  it('fails a managed computer’s creation with a step error that says why, and runs nothing of it', async () => {
    const root = await reposRoot();
    // A PATH with everything a computer needs but bubblewrap.
    const bin = mkdtempSync(join(tmpdir(), 'ap-no-bwrap-'));
    for (const program of ['git', 'node', 'npm', 'sh', 'socat', 'prlimit', 'setpriv', 'chown', 'du', 'env']) {
      const found = execFileSync('sh', ['-c', `command -v ${program}`], { encoding: 'utf8' }).trim();
      symlinkSync(found, join(bin, program));
    }
    const path = process.env.PATH;
    const t = await startTestApp({ LOCAL_REPOS_DIR: root, LOCAL_INSTALL_SCRIPTS: 'true' });
    process.env.PATH = bin;
    try {
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const marker = join(t.config.dataDir, 'ran.txt');
      const name = `unsandboxed-${randomUUID().slice(0, 6)}`;
      const repo = await createGitRepo(root, name, npmProject(name, `node -e "require('fs').writeFileSync('${marker}', 'ran')"`));
      const created = await api(await t.app.getUrl(), member, 'POST', '/api/v0/computers', { name, provider: 'local', repos: [repo], autoInstallDeps: true });
      expect(created.status).toBe(201);
      const base = await t.app.getUrl();
      const done = await until(
        () => api(base, member, 'GET', `/api/v0/computers/${created.body.id}`),
        (r) => r.body.status !== 'provisioning',
        'provisioning to end',
      );
      expect(done.body.status).toBe('error');
      expect(done.body.provisioningSteps[0]).toMatchObject({
        id: 'create-computer',
        status: 'failed',
        error: expect.stringMatching(
          /^This host cannot sandbox the computer: bwrap is not installed \(Debian: apt-get install bubblewrap\)\..*LOCAL_SANDBOX=off/,
        ),
      });
      expect(existsSync(join(t.config.computersDir, created.body.id as string))).toBe(false);
      expect(existsSync(marker)).toBe(false);
    } finally {
      process.env.PATH = path;
      await t.close();
      rmSync(bin, { recursive: true, force: true });
    }
  });
});

import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { api, until } from '../utils/polling';
import { createGitRepo, reposRoot } from '../utils/git-fixtures';
import { startServer, ServerProcess } from '../utils/processes';
import { startTestApp } from '../utils/test-app';
import { createTestDatabase, TestDatabase } from '../utils/test-database';
import { CANARY, databasePortOf, ESCAPE_SCRIPT, EscapeReport, expectConfined, hostService, targetsFor } from '../utils/fixtures/computer-escapes';

// Escapes attempted by a managed computer's server-run agent: a hook and a tool call, and the organization's sandbox nested in the computer's.

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
    // A service on the host's loopback: the sandbox reaches the server, by the way it is given, and nothing else.
    const service = await hostService();
    const targets = targetsFor(config, victim.workspace, join(hostDir, 'canary.txt'), root, [
      ['127.0.0.1', service.port],
      ...databasePortOf(database.env.DATABASE_URL),
    ]);
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
      expect(service.connections()).toBe(0);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      expect(readFileSync(join(victim.workspace, 'secret.txt'), 'utf8')).toBe('the victim computer secret');
    } finally {
      rmSync(hostDir, { recursive: true, force: true });
      await model.close();
      await service.close();
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

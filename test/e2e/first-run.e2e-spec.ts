import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runNode, ServerProcess, startServer } from '../utils/processes';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;

async function call(base: string, method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

const setupBody = (setupToken: string) => ({
  setupToken,
  organization: { slug: 'acme', name: 'Acme' },
  owner: { email: 'Owner@Acme.example', name: 'The Owner' },
});
const tokenIn = (output: string) => /setup token (setup_[A-Za-z0-9_-]+)/.exec(output)?.[1];

/**
 * A fresh server, as its operator meets it: real processes on a new database. The first run prints a
 * setup token; the token makes the first organization and owner once; the CLI works while the server runs.
 */
describe('First run (e2e, real processes)', () => {
  let database: TestDatabase;
  const servers: ServerProcess[] = [];
  const start = async (env: Record<string, string> = {}) => {
    const server = await startServer([], { ...database.env, LOCAL_AGENTS: 'off', ...env });
    servers.push(server);
    return server;
  };
  const cli = (...args: string[]) => runNode('dist/cli/main.js', args, database.env);

  beforeEach(async () => {
    database = await createTestDatabase();
  });

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.stop()));
    await database.drop();
  });

  it('prints a setup token on an empty database; it makes the first organization and owner once, then stops working', async () => {
    const server = await start();
    const token = tokenIn(server.output());
    expect(token).toBeDefined();
    expect((await call(server.url, 'GET', '/api/v0/setup')).body).toEqual({ needed: true });

    const wrong = await call(server.url, 'POST', '/api/v0/setup', setupBody(`${token!.slice(0, -2)}xx`));
    expect(wrong).toMatchObject({ status: 401, body: { metadata: { code: 'setup_invalid_token' } } });
    expect((await call(server.url, 'POST', '/api/v0/setup', { ...setupBody(token!), organization: { slug: 'Not A Slug', name: 'x' } })).status).toBe(400);

    const done = await call(server.url, 'POST', '/api/v0/setup', setupBody(token!));
    expect(done.status).toBe(201);
    expect(done.body).toMatchObject({
      organization: { slug: 'acme', name: 'Acme' },
      owner: { email: 'owner@acme.example', role: 'owner', kind: 'human' },
      apiKey: { key: expect.stringMatching(/^apk_/) },
    });
    const members = await call(server.url, 'GET', '/api/v0/organization/members', undefined, done.body.apiKey.key as string);
    expect(members.status).toBe(200);
    expect(members.body.members.map((m: Json) => m.email)).toEqual(['owner@acme.example']);

    expect((await call(server.url, 'POST', '/api/v0/setup', setupBody(token!))).body.metadata.code).toBe('setup_done');
    expect((await call(server.url, 'GET', '/api/v0/setup')).body).toEqual({ needed: false });
    await server.stop();
    servers.pop();
    expect(tokenIn((await start()).output())).toBeUndefined();
  });

  it('does not start with a bad variable: it names each one, and prints no stack', async () => {
    const result = await runNode('dist/main.js', [], { ...database.env, PORT: '', LOCAL_SANDBOX: 'sometimes' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'Invalid configuration:\n  PORT: PORT must be a whole number from 0 to 65535\n  LOCAL_SANDBOX: LOCAL_SANDBOX must be on or off\n',
    );
  });

  (serverUrl() ? it : it.skip)('gives every instance the same token, and one setup for all of them (PostgreSQL)', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    expect(tokenIn(a.output())).toBe(tokenIn(b.output()));
    const results = await Promise.all([a, b].map((server) => call(server.url, 'POST', '/api/v0/setup', setupBody(tokenIn(server.output())!))));
    expect(results.map((res) => res.status).sort()).toEqual([201, 409]);
  });

  // Twelve CLI processes, each a Node start: on a loaded machine that is minutes, not the default minute.
  (serverUrl() ? it.skip : it)(
    'runs the CLI through the running server on the embedded database',
    async () => {
      const server = await start();
      const setup = await cli('setup', 'acme', 'Acme', 'owner@acme.example', 'The Owner');
      expect(setup).toMatchObject({ code: 0 });
      const ownerKey = (JSON.parse(setup.stdout) as Json).key as string;
      expect((await call(server.url, 'GET', '/api/v0/organization/members', undefined, ownerKey)).status).toBe(200);

      expect((await cli('user:create', 'acme', 'dev@acme.example', 'Dev', 'member')).code).toBe(0);
      const created = await cli('key:create', 'acme', 'dev@acme.example', 'laptop');
      const devKey = (JSON.parse(created.stdout) as Json).key as string;
      expect((await call(server.url, 'GET', '/api/v0/sessions', undefined, devKey)).status).toBe(200);
      expect((JSON.parse((await cli('user:list', 'acme')).stdout) as Json[]).map((user) => [user.email, user.role])).toEqual([
        ['dev@acme.example', 'member'],
        ['owner@acme.example', 'owner'],
      ]);
      expect((JSON.parse((await cli('key:list', 'acme', 'dev@acme.example')).stdout) as Json[]).map((key) => key.name)).toEqual(['laptop']);
      expect((await cli('user:role', 'acme', 'dev@acme.example', 'manager')).code).toBe(0);
      expect((await cli('user:remove', 'acme', 'dev@acme.example')).code).toBe(0);
      // Removed by the server itself: the key stops on its very next request.
      expect((await call(server.url, 'GET', '/api/v0/sessions', undefined, devKey)).status).toBe(401);

      const again = await cli('setup', 'other', 'Other', 'x@other.example', 'X');
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/set up already/);
      const lastOwner = await cli('user:remove', 'acme', 'owner@acme.example');
      expect(lastOwner.code).toBe(1);
      expect(lastOwner.stderr).toMatch(/last owner/);
      expect((await cli('user:role', 'acme', 'owner@acme.example', 'emperor')).code).toBe(64);
      expect(JSON.parse((await cli('org:list')).stdout)).toEqual([expect.objectContaining({ slug: 'acme', name: 'Acme' })]);
    },
    180_000,
  );

  // Another account on the same machine (here nobody, 65534) must not run operator commands: only root can play it.
  (serverUrl() || process.getuid?.() !== 0 ? it.skip : it)('refuses the operator socket to another user of the machine', async () => {
    await start();
    const { socketDir } = JSON.parse(readFileSync(join(database.env.DATA_DIR, 'server.json'), 'utf8')) as { socketDir: string };
    const attempt = `
      const socket = require('net').createConnection(${JSON.stringify(join(socketDir, 'operator.sock'))});
      socket.on('connect', () => socket.end(JSON.stringify({ command: 'setup', args: ['evil', 'Evil', 'x@evil.example', 'X'] }) + '\\n'));
      socket.on('data', (data) => process.stdout.write('ANSWER ' + data));
      socket.on('error', (error) => process.stdout.write('REFUSED ' + error.code));`;
    const nobody = { uid: 65534, gid: 65534, env: { PATH: process.env.PATH }, encoding: 'utf8' as const };
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', attempt], nobody);
    expect(stdout).toMatch(/^REFUSED (EACCES|ENOENT)$/);
    // Nor through the CLI, which can read neither the data directory nor the socket.
    const viaCli = await promisify(execFile)(process.execPath, ['dist/cli/main.js', 'org:list'], { ...nobody, env: { ...nobody.env, ...database.env } }).catch(
      (error: { code: number; stdout: string }) => error,
    );
    expect(viaCli).toMatchObject({ code: expect.any(Number) });
    expect(viaCli.stdout).not.toMatch(/evil|acme/);
    expect((await cli('org:list')).stdout.trim()).toBe('[]');
  });
});

import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { LONG_WAIT_MS, until } from '../utils/polling';
import { ServerProcess, startServer } from '../utils/processes';
import { startTestApp } from '../utils/test-app';
import { createTestDatabase, TestDatabase } from '../utils/test-database';

// eslint-disable-next-line no-control-regex -- ANSI colour codes start with ESC
const ANSI = /\x1b\[[0-9;]*m/;
const SESSION_ID = '00000000-0000-4000-8000-000000000000';

/** The real server process as people and log collectors see it: LOG_FORMAT=json and LOG_FORMAT=pretty. */
describe('Logs for people and for machines', () => {
  let database: TestDatabase;
  let owner: TestUser;

  beforeAll(async () => {
    database = await createTestDatabase();
    const seed = await startTestApp({}, database);
    owner = await createUser(seed, Role.Owner);
    await seed.app.close();
  });

  afterAll(async () => {
    await database.drop();
  });

  const env = (extra: Record<string, string>) => ({ ...database.env, PROVISIONING_CONCURRENCY: '0', NO_COLOR: '', FORCE_COLOR: '', ...extra });

  const call = (server: ServerProcess, method: string, path: string, requestId: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${owner.key}`,
        'x-request-id': requestId,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  /** Waits until as many lines as there are request ids mention one of them. */
  function waitFor(server: ServerProcess, ids: string[]): Promise<string[]> {
    return until(
      () =>
        server
          .output()
          .split('\n')
          .filter((line) => ids.some((id) => line.includes(id))),
      (lines) => lines.length >= ids.length,
      `the lines of ${ids.join(', ')}`,
      LONG_WAIT_MS,
    );
  }

  /** The lines printed up to and including the last start-up line (Data: ...). */
  const startupLines = (server: ServerProcess) => {
    const lines = server.output().split('\n');
    return lines.slice(0, lines.findIndex((line) => line.includes('Data: ')) + 1);
  };

  describe('LOG_FORMAT=json', () => {
    let server: ServerProcess;
    beforeAll(async () => {
      server = await startServer([], env({ LOG_FORMAT: 'json' }));
    });
    afterAll(async () => {
      await server?.stop();
    });

    it('prints one JSON access line per request: method, route pattern, status, duration, request id; no query value or body', async () => {
      const secret = 'query-secret-value-7731';
      expect((await call(server, 'GET', `/api/v0/sessions/${SESSION_ID}?include=${secret}`, 'json-get')).status).toBe(400);
      expect((await call(server, 'POST', '/api/v0/sessions', 'json-post', { title: 'body-secret-title-4412' })).status).toBe(201);
      expect((await call(server, 'GET', `/api/v0/sessions?limit=2&cursor=${secret}`, 'json-list')).status).toBe(400);
      const lines = (await waitFor(server, ['json-get', 'json-post', 'json-list'])).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines).toHaveLength(3);
      expect(lines).toEqual([
        expect.objectContaining({
          context: 'Access',
          method: 'GET',
          route: '/api/v0/sessions/:sessionId',
          status: 400,
          durationMs: expect.any(Number),
          requestId: 'json-get',
        }),
        expect.objectContaining({
          context: 'Access',
          method: 'POST',
          route: '/api/v0/sessions',
          status: 201,
          durationMs: expect.any(Number),
          requestId: 'json-post',
        }),
        expect.objectContaining({ context: 'Access', method: 'GET', route: '/api/v0/sessions', status: 400, requestId: 'json-list' }),
      ]);
      expect(server.output()).not.toContain(secret);
      expect(server.output()).not.toContain('body-secret-title-4412');
      expect(server.output()).not.toContain(owner.key);
    });

    it('starts in a few lines saying where the API, the docs and the data are, and none per route', () => {
      const lines = startupLines(server);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.length).toBeLessThanOrEqual(8);
      for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
      const text = lines.join('\n');
      expect(text).toContain(`${server.url}/api/v0`);
      expect(text).toContain(`${server.url}/docs`);
      expect(text).toMatch(/Data: (PostgreSQL|embedded PostgreSQL)/);
      expect(server.output()).not.toMatch(/RouterExplorer|RoutesResolver|InstanceLoader|Mapped \{/);
      // The data line names the PostgreSQL server, never its password.
      const url = process.env.TEST_DATABASE_URL;
      if (url && new URL(url).password) expect(server.output()).not.toContain(new URL(url).password);
    });
  });

  // One process at a time: the embedded database has one owner.
  describe('LOG_FORMAT=pretty under NO_COLOR', () => {
    let plain: ServerProcess;
    beforeAll(async () => {
      plain = await startServer([], env({ LOG_FORMAT: 'pretty', NO_COLOR: '1' }));
    });
    afterAll(async () => {
      await plain?.stop();
    });

    it('prints readable lines, no JSON, without colours', async () => {
      expect((await call(plain, 'GET', `/api/v0/sessions/${SESSION_ID}`, 'pretty-get')).status).toBe(404);
      const [line] = await waitFor(plain, ['pretty-get']);
      expect(line).toMatch(/WARN.*\[Access\] GET \/api\/v0\/sessions\/:sessionId 404 \d+(\.\d+)? ms pretty-get/);
      const output = plain.output();
      expect(output).not.toMatch(ANSI);
      for (const printed of output.split('\n').filter(Boolean)) expect(printed.trimStart().startsWith('{')).toBe(false);
      const startup = startupLines(plain);
      expect(startup.length).toBeLessThanOrEqual(8);
      expect(startup.join('\n')).toContain(`Docs: ${plain.url}/docs`);
      expect(output).not.toMatch(/RouterExplorer|RoutesResolver|InstanceLoader/);
    });
  });

  describe('LOG_FORMAT=pretty under FORCE_COLOR', () => {
    let colored: ServerProcess;
    beforeAll(async () => {
      colored = await startServer([], env({ LOG_FORMAT: 'pretty', FORCE_COLOR: '1' }));
    });
    afterAll(async () => {
      await colored?.stop();
    });

    it('colours them', async () => {
      expect((await call(colored, 'GET', '/api/v0/sessions', 'pretty-colored')).status).toBe(200);
      const [line] = await waitFor(colored, ['pretty-colored']);
      expect(line).toMatch(ANSI);
      expect(line.replace(new RegExp(ANSI.source, 'g'), '')).toMatch(/INFO.*\[Access\] GET \/api\/v0\/sessions 200 \d+(\.\d+)? ms pretty-colored/);
    });
  });
});

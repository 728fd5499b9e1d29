import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { ServerProcess, startServer } from '../utils/processes';
import { LONG_WAIT_MS, until } from '../utils/polling';
import { startTestApp } from '../utils/test-app';
import { createTestDatabase, TestDatabase } from '../utils/test-database';

type Line = Record<string, unknown>;

/** The JSON lines the server printed, from the given offset on. */
function linesOf(server: ServerProcess, from = 0): Line[] {
  return server
    .output()
    .slice(from)
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Line);
}

/** The real server process, logging at info, as an operator runs it. */
describe('What the operator sees in the logs', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let owner: TestUser;
  let member: TestUser;

  beforeAll(async () => {
    database = await createTestDatabase();
    const seed = await startTestApp({}, database);
    owner = await createUser(seed, Role.Owner);
    member = await createUser(seed, Role.Member, { id: owner.organizationId, slug: owner.organizationSlug });
    await seed.app.close();
    server = await startServer([], { ...database.env, LOG_LEVEL: 'info', PROVISIONING_CONCURRENCY: '0' });
  });

  afterAll(async () => {
    await server?.stop();
    await database.drop();
  });

  const call = (method: string, path: string, user?: TestUser, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: {
        ...(user ? { authorization: `Bearer ${user.key}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  /** The access lines of the given request ids, once they are all written (they reach this process a moment after). */
  function accessLines(ids: string[]): Promise<Line[]> {
    return until(
      () => linesOf(server).filter((line) => line.context === 'Access' && ids.includes(line.requestId as string)),
      (lines) => lines.length >= ids.length,
      `the access lines of ${ids.join(', ')}`,
      LONG_WAIT_MS,
    );
  }

  it('one access line per request: time, request id, method, route pattern, status, duration, bytes, organization and credential', async () => {
    const sessionId = '00000000-0000-4000-8000-000000000000';
    const responses = [
      await call('GET', '/api/v0/sessions?limit=5', owner, undefined, { 'x-request-id': 'log-test-list' }),
      await call('GET', `/api/v0/sessions/${sessionId}`, owner, undefined, { 'x-request-id': 'log-test-404' }),
      await call('GET', '/api/v0/sessions', undefined, undefined, { 'x-request-id': 'log-test-401' }),
      await call('GET', '/no/such/route?token=abc', undefined, undefined, { 'x-request-id': 'log-test-noroute' }),
      await call('POST', '/api/v0/sessions', owner, { title: 'logged' }, { 'x-request-id': 'log-test-create' }),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 404, 401, 404, 201]);
    const lines = await accessLines(['log-test-list', 'log-test-404', 'log-test-401', 'log-test-noroute', 'log-test-create']);
    const byId = Object.fromEntries(lines.map((line) => [line.requestId, line]));
    expect(lines).toHaveLength(5);

    expect(byId['log-test-list']).toMatchObject({
      level: 30,
      time: expect.any(Number),
      method: 'GET',
      route: '/api/v0/sessions',
      status: 200,
      durationMs: expect.any(Number),
      bytesOut: Number(responses[0].headers.get('content-length')),
      organizationId: owner.organizationId,
      credentialId: owner.apiKeyId,
    });
    expect(byId['log-test-404']).toMatchObject({ route: '/api/v0/sessions/:sessionId', status: 404, level: 40, credentialId: owner.apiKeyId });
    expect(byId['log-test-401']).toMatchObject({ route: '/api/v0/sessions', status: 401, level: 40 });
    expect(byId['log-test-401'].credentialId).toBeUndefined();
    expect(byId['log-test-noroute']).toMatchObject({ route: null, status: 404 });

    // A path Fastify cannot route at all (a malformed percent-escape) is answered and logged too.
    const malformed = await call('GET', '/api/v0/sessions/%zz', owner, undefined, { 'x-request-id': 'log-test-malformed' });
    expect(malformed.status).toBe(400);
    expect(await accessLines(['log-test-malformed'])).toEqual([expect.objectContaining({ route: null, status: 400, method: 'GET' })]);
    expect(byId['log-test-create']).toMatchObject({ method: 'POST', status: 201, bytesIn: JSON.stringify({ title: 'logged' }).length });
  });

  it('security actions are logged with who did them, and no key, token or body ever reaches the output', async () => {
    const from = server.output().length;
    const created = await call('POST', '/settings/api-keys', member, { name: 'laptop' }, { 'x-request-id': 'log-test-key' });
    expect(created.status).toBe(201);
    const { id: newKeyId, key: newKey } = (await created.json()) as { id: string; key: string };
    expect((await call('DELETE', `/settings/api-keys/${newKeyId}`, owner)).status).toBeLessThan(300);
    const revised = await call('PATCH', '/api/v0/organization/enterprise-controls', owner, { settings: { wikiCloudSync: false } });
    expect(revised.status).toBe(200);

    // Written while the requests are served; they reach this process through the server's output a moment later.
    const security = await until(
      () => linesOf(server, from).filter((line) => typeof line.security === 'string'),
      (lines) => ['api_key.created', 'api_key.revoked', 'controls.revised'].every((name) => lines.some((line) => line.security === name)),
      'the security lines',
      LONG_WAIT_MS,
    );
    expect(security).toEqual(
      expect.arrayContaining([
        // A line written while a request is served carries its id (and never its URL, which may hold secrets).
        expect.objectContaining({
          security: 'api_key.created',
          requestId: 'log-test-key',
          organizationId: member.organizationId,
          userId: member.userId,
          credentialId: member.apiKeyId,
          apiKeyId: newKeyId,
        }),
        expect.objectContaining({
          security: 'api_key.revoked',
          userId: owner.userId,
          credentialId: owner.apiKeyId,
          apiKeyId: newKeyId,
          keyUserId: member.userId,
        }),
        expect.objectContaining({
          security: 'controls.revised',
          userId: owner.userId,
          credentialId: owner.apiKeyId,
          revision: expect.any(Number),
          changedSettings: 'wikiCloudSync',
        }),
      ]),
    );
    for (const line of security) expect(line).not.toHaveProperty('url');
    const everything = server.output();
    for (const secret of [owner.key, member.key, newKey]) expect(everything).not.toContain(secret);
    expect(everything).not.toContain('token=abc');
  });
});

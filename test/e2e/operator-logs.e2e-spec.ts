import { randomUUID } from 'node:crypto';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { ServerProcess, startServer } from '../utils/processes';
import { LONG_WAIT_MS, until } from '../utils/polling';
import { startTestApp } from '../utils/test-app';
import { createTestDatabase, TestDatabase } from '../utils/test-database';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- plain Node, as the MCP fixture it serves
const { startOAuthMcpServer } = require('../fixtures/mcp-oauth-server.js') as {
  startOAuthMcpServer: (options?: {
    accessTokenSeconds?: number;
  }) => Promise<{ url: string; port: number; provider: { issued: string[] }; close: () => Promise<void> }>;
};

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
  let mcp: Awaited<ReturnType<typeof startOAuthMcpServer>>;

  beforeAll(async () => {
    // Its tokens last 30 s, within the minute ahead in which the relay refreshes: every relayed request refreshes.
    mcp = await startOAuthMcpServer({ accessTokenSeconds: 30 });
    database = await createTestDatabase();
    const seed = await startTestApp({}, database);
    owner = await createUser(seed, Role.Owner);
    member = await createUser(seed, Role.Member, { id: owner.organizationId, slug: owner.organizationSlug });
    await seed.app.close();
    server = await startServer([], { ...database.env, LOG_LEVEL: 'info', PROVISIONING_CONCURRENCY: '0', MCP_RELAY_ALLOWED_HOSTS: `127.0.0.1:${mcp.port}` });
  });

  afterAll(async () => {
    await server?.stop();
    await mcp?.close();
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

  it("an MCP server's OAuth sign-in and its refreshes are logged by ids, and no token, code or state reaches the output", async () => {
    const from = server.output().length;
    const set = await call('PATCH', '/api/v0/organization/enterprise-controls', owner, {
      settings: { mcpServers: [{ name: 'remote', transport: 'http', url: mcp.url }] },
    });
    expect(set.status).toBe(200);
    const computer = await call('POST', '/api/v0/computers', owner, { name: 'logs', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
    expect(computer.status).toBe(201);
    const { agentToken } = (await computer.json()) as { agentToken: string };
    const started = await call('POST', '/api/v0/organization/enterprise-controls/mcp-servers/remote/oauth', owner, {});
    const { authorizationUrl } = (await started.json()) as { authorizationUrl: string };
    const state = new URL(authorizationUrl).searchParams.get('state')!;
    const back = new URL((await fetch(authorizationUrl, { redirect: 'manual' })).headers.get('location')!);
    const code = back.searchParams.get('code')!;
    expect((await fetch(`${server.url}${back.pathname}${back.search}`, { redirect: 'manual' })).status).toBe(303);
    const relayed = await fetch(`${server.url}/api/v0/agent/mcp/remote`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agentToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'logs', version: '1' } },
      }),
    });
    expect(relayed.status).toBe(200);

    const security = await until(
      () => linesOf(server, from).filter((line) => typeof line.security === 'string' && String(line.security).startsWith('mcp_oauth.')),
      (lines) => ['mcp_oauth.sign_in_started', 'mcp_oauth.connected'].every((name) => lines.some((line) => line.security === name)),
      'the sign-in lines',
      LONG_WAIT_MS,
    );
    expect(security).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ security: 'mcp_oauth.sign_in_started', userId: owner.userId, mcpServer: 'remote' }),
        expect.objectContaining({ security: 'mcp_oauth.connected', userId: owner.userId, mcpServer: 'remote' }),
      ]),
    );
    // A code grant and a refresh: two access tokens and two refresh tokens, none of them printed.
    expect(mcp.provider.issued).toHaveLength(4);
    const everything = server.output();
    for (const secret of [...mcp.provider.issued, code, state, agentToken]) expect(everything).not.toContain(secret);
  });
});

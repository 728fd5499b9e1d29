import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { agentOf, Auth, Json } from '../utils/fixtures/model-relay';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectInvalid, expectV0Error } from '../utils/v0-errors';

/** A v0 error with its code, and a detail that says what `detail` matches. */
function refused(res: Parameters<typeof expectV0Error>[0], status: number, code: string, detail?: RegExp): void {
  expectV0Error(res, status, code);
  if (detail) expect(res.body.detail).toMatch(detail);
}

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the fixture is plain Node, as the MCP fixture it serves
const { startOAuthMcpServer } = require('../fixtures/mcp-oauth-server.js') as {
  startOAuthMcpServer: (options?: { accessTokenSeconds?: number; authorizationServer?: string }) => Promise<OAuthFixture>;
};

interface OAuthFixture {
  url: string;
  port: number;
  requests: Array<{ method: string; headers: Record<string, string | undefined> }>;
  provider: { grants: string[]; access: Map<string, unknown>; refresh: Map<string, unknown> };
  options: { accessTokenSeconds: number; denying: boolean };
  expireAccessTokens(): void;
  forgetTokens(): void;
  close(): Promise<void>;
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
};

/**
 * OAuth sign-in to a remote MCP server, from the attacker's side as well as the admin's: a real MCP server behind the
 * SDK's bearer check, with an authorization server built from the SDK's router, stands in for the vendor. The admin's
 * browser is played by following the redirects by hand.
 */
describe('MCP servers behind OAuth: sign-in, the relay, refresh (e2e)', () => {
  let t: TestApp;
  let mcp: OAuthFixture;
  let liar: OAuthFixture;
  let owner: TestUser;
  let member: TestUser;
  let stranger: TestUser;
  let agent: Auth;
  let baseUrl: string;

  beforeAll(async () => {
    mcp = await startOAuthMcpServer();
    // An allowed server whose metadata names the cloud metadata address as where to sign in.
    liar = await startOAuthMcpServer({ authorizationServer: 'http://169.254.169.254/' });
    t = await startTestApp({ MCP_RELAY_ALLOWED_HOSTS: `127.0.0.1:${mcp.port},127.0.0.1:${liar.port}`, CONTROLS_CACHE_MS: '0' });
    baseUrl = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    owner = await createUser(t, Role.Owner);
    member = await createUser(t, Role.Member, { id: owner.organizationId, slug: owner.organizationSlug });
    stranger = await createUser(t, Role.Owner);
    agent = await agentOf(t, owner);
  });

  afterAll(async () => {
    await t?.close();
    await mcp?.close();
    await liar?.close();
  });

  beforeEach(async () => {
    mcp.requests.length = 0;
    mcp.provider.grants.length = 0;
    mcp.options.denying = false;
    mcp.options.accessTokenSeconds = 3600;
    await t.http().delete(oauthPath()).set(owner.auth);
    await setServers([{ name: 'remote', transport: 'http', url: mcp.url }]);
  });

  const oauthPath = (name = 'remote') => `/api/v0/organization/enterprise-controls/mcp-servers/${name}/oauth`;
  const setServers = (mcpServers: Json[]) =>
    t.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).send({ settings: { mcpServers } }).expect(200);
  const relay = () => t.http().post('/api/v0/agent/mcp/remote').set(agent).set('accept', 'application/json, text/event-stream').send(INITIALIZE);
  const status = async () => (await t.http().get(oauthPath()).set(owner.auth).expect(200)).body as Json;

  /** The admin's sign-in, start to callback: where the callback sent the browser. */
  async function signIn(body: Json = {}): Promise<URL> {
    const started = await t.http().post(oauthPath()).set(owner.auth).send(body).expect(200);
    expect(started.body.connection).toMatchObject({ serverName: 'remote', status: 'pending' });
    // The authorization server signs the admin in at once and sends the browser back with a code.
    const authorization = await fetch(started.body.authorizationUrl as string, { redirect: 'manual' });
    expect(authorization.status).toBe(302);
    const callback = new URL(authorization.headers.get('location')!);
    expect(`${callback.origin}${callback.pathname}`).toBe(`${t.config.baseUrl}/api/v0/mcp-oauth/callback`);
    const finished = await t.http().get(`${callback.pathname}${callback.search}`).expect(303);
    (signIn as { callback?: string }).callback = `${callback.pathname}${callback.search}`;
    return new URL(finished.headers.location as string, baseUrl);
  }

  async function connect() {
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/api/v0/agent/mcp/remote`), { requestInit: { headers: agent } }));
    return client;
  }

  it('asks for a sign-in until an admin makes one; then the relay alone sends the token, and no answer holds it', async () => {
    refused(await relay(), 409, 'mcp_oauth_required', /needs an OAuth sign-in.*console's controls page/);
    expect(await status()).toEqual({
      serverName: 'remote',
      status: 'not_connected',
      url: mcp.url,
      scope: null,
      expiresAt: null,
      connectedAt: null,
      connectedBy: null,
      problem: null,
    });

    const landing = await signIn();
    expect(landing.pathname).toBe('/settings/controls');
    expect(Object.fromEntries(landing.searchParams)).toEqual({ mcpServer: 'remote', mcpOAuth: 'connected' });
    const connected = await status();
    expect(connected).toMatchObject({ status: 'connected', scope: 'tools', connectedBy: owner.userId, problem: null });
    expect(Date.parse(connected.expiresAt as string)).toBeGreaterThan(Date.now() + 3_000_000);
    expect(mcp.provider.grants).toEqual(['authorization_code']);

    // The code is good once: the same callback again is refused, and the connection stays.
    const replay = await t
      .http()
      .get((signIn as { callback?: string }).callback!)
      .expect(303);
    expect(new URL(replay.headers.location as string, baseUrl).searchParams.get('mcpOAuth')).toBe('failed');
    expect((await status()).status).toBe('connected');

    mcp.requests.length = 0;
    const client = await connect();
    expect(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })).toEqual({ content: [{ type: 'text', text: '5' }] });
    const [token] = [...mcp.provider.access.keys()];
    // A server quoting the token back has it masked on its way to the agent.
    expect(await client.callTool({ name: 'echo', arguments: { text: `you sent ${token}` } })).toEqual({
      content: [{ type: 'text', text: `echo: you sent ****${token.slice(-4)}` }],
    });
    await client.close();
    expect(mcp.requests.length).toBeGreaterThanOrEqual(3);
    for (const request of mcp.requests) expect(request.headers.authorization).toBe(`Bearer ${token}`);

    // No answer an agent or an admin can read holds a token.
    const [refresh] = [...mcp.provider.refresh.keys()];
    const answers = [
      await status(),
      (await t.http().get('/api/v0/organization/enterprise-controls').set(owner.auth).expect(200)).body,
      (await t.http().get('/api/v0/agent/policy').set(agent).expect(200)).body,
    ];
    for (const answer of answers) {
      expect(JSON.stringify(answer)).not.toContain(token);
      expect(JSON.stringify(answer)).not.toContain(refresh);
    }
    // Nor the database in the clear.
    const rows: Array<{ secrets: string }> = await t.app.get(DataSource).query('SELECT secrets FROM mcp_oauth_connections');
    expect(rows).toHaveLength(1);
    expect(rows[0].secrets).toMatch(/^enc:v1:/);
    expect(rows[0].secrets).not.toContain(token);
  });

  it('refreshes a token before its end, and one the server refuses, with the request sent again', async () => {
    mcp.options.accessTokenSeconds = 30; // within the minute ahead in which the relay refreshes
    await signIn();
    expect((await relay()).status).toBe(200);
    expect(mcp.provider.grants).toEqual(['authorization_code', 'refresh_token']);

    mcp.options.accessTokenSeconds = 3600;
    expect((await relay()).status).toBe(200);
    expect(mcp.provider.grants).toHaveLength(3);
    const fresh = [...mcp.provider.access.keys()].at(-1);
    expect((await relay()).status).toBe(200);
    expect(mcp.provider.grants).toHaveLength(3);

    // The server forgets the access token (but not the refresh token): the relay refreshes and sends again.
    mcp.expireAccessTokens();
    mcp.requests.length = 0;
    expect((await relay()).status).toBe(200);
    expect(mcp.provider.grants).toEqual(['authorization_code', 'refresh_token', 'refresh_token', 'refresh_token']);
    expect(mcp.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${fresh}`, `Bearer ${[...mcp.provider.access.keys()][0]}`]);
  });

  it('asks for a new sign-in when the authorization server will not refresh, and after a denied one', async () => {
    await signIn();
    mcp.forgetTokens();
    refused(await relay(), 409, 'mcp_oauth_required', /could not be refreshed/);
    expect(await status()).toMatchObject({ status: 'reconnect_needed', problem: expect.stringMatching(/could not be refreshed/) });
    // It stays refused without calling the authorization server again.
    const grants = mcp.provider.grants.length;
    refused(await relay(), 409, 'mcp_oauth_required');
    expect(mcp.provider.grants).toHaveLength(grants);

    mcp.options.denying = true;
    const landing = await signIn();
    expect(Object.fromEntries(landing.searchParams)).toEqual({
      mcpServer: 'remote',
      mcpOAuth: 'failed',
      reason: expect.stringContaining('access_denied'),
    });
    expect(await status()).toMatchObject({ status: 'reconnect_needed', problem: expect.stringContaining('access_denied') });

    mcp.options.denying = false;
    await signIn();
    expect(await status()).toMatchObject({ status: 'connected', problem: null });
    expect((await relay()).status).toBe(200);
  });

  it('holds a sign-in to the url it was made for: a changed url is not signed in, and never gets the token', async () => {
    await signIn();
    await setServers([{ name: 'remote', transport: 'http', url: `${mcp.url}?tenant=other` }]);
    expect((await status()).status).toBe('not_connected');
    mcp.requests.length = 0;
    refused(await relay(), 409, 'mcp_oauth_required');
    expect(mcp.requests.every((request) => request.headers.authorization === undefined)).toBe(true);
  });

  it('keeps every call of a sign-in to the address rules, however the server points elsewhere', async () => {
    // A url on a host the operator did not allow: nothing is sent.
    await setServers([{ name: 'remote', transport: 'http', url: `http://127.0.0.2:${mcp.port}/mcp` }]);
    refused(await t.http().post(oauthPath()).set(owner.auth).send({}), 403, 'mcp_address_refused', /127\.0\.0\.2/);
    expect(mcp.requests).toEqual([]);

    // An allowed server whose metadata names the cloud metadata address as where to sign in.
    await setServers([{ name: 'remote', transport: 'http', url: liar.url }]);
    refused(await t.http().post(oauthPath()).set(owner.auth).send({}), 403, 'mcp_address_refused', /169\.254\.169\.254/);
  });

  it('is for Owners and Managers of the organization, for its HTTP servers, with a checked body', async () => {
    refused(await t.http().post(oauthPath()).set(member.auth).send({}), 403, 'insufficient_role');
    refused(await t.http().get(oauthPath()).set(member.auth), 403, 'insufficient_role');
    refused(await t.http().get(oauthPath()).set(stranger.auth), 404, 'mcp_server_not_found');
    refused(await t.http().post(oauthPath()).set(agent).send({}), 403, 'computer_token_not_accepted');
    refused(await t.http().get(oauthPath('nope')).set(owner.auth), 404, 'mcp_server_not_found');
    await setServers([{ name: 'local', transport: 'stdio', command: 'true' }]);
    refused(await t.http().post(oauthPath('local')).set(owner.auth).send({}), 409, 'mcp_transport_mismatch');
    await setServers([{ name: 'remote', transport: 'http', url: mcp.url }]);
    expectInvalid(await t.http().post(oauthPath()).set(owner.auth).send({ clientId: 5 }), 'clientId');
    expectInvalid(await t.http().post(oauthPath()).set(owner.auth).send({ redirectUri: 'https://evil.example' }), 'redirectUri');
    // A callback with an unknown state changes nothing and says so.
    const unknown = await t.http().get('/api/v0/mcp-oauth/callback?state=forged&code=x').expect(303);
    expect(new URL(unknown.headers.location as string, baseUrl).searchParams.get('mcpOAuth')).toBe('failed');
  });

  it("uses a client and a scope the admin gives instead of registering one and the metadata's scope", async () => {
    const registered = await fetch(new URL('/register', mcp.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [`${t.config.baseUrl}/api/v0/mcp-oauth/callback`], token_endpoint_auth_method: 'none', client_name: 'by hand' }),
    });
    const { client_id: clientId } = (await registered.json()) as { client_id: string };
    const started = await t.http().post(oauthPath()).set(owner.auth).send({ clientId, scope: 'tools offline_access' }).expect(200);
    const asked = new URL(started.body.authorizationUrl as string).searchParams;
    expect(asked.get('client_id')).toBe(clientId);
    // The scope given, not the one the server's metadata lists (`tools`).
    expect(asked.get('scope')).toBe('tools offline_access');
  });
});

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { join } from 'node:path';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { agentOf, Auth, Json } from '../utils/fixtures/model-relay';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectInvalid, expectV0Error } from '../utils/v0-errors';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the fixture is plain Node, so that agents can start it over stdio
const { startHttpServer } = require('../fixtures/mcp-server.js') as {
  startHttpServer: (secret: { header: string; value: string }) => Promise<{ url: string; port: number; requests: Json[]; close: () => Promise<void> }>;
};

const HEADER_SECRET = 'mcp-header-secret-0123456789';
const ENV_SECRET = 'mcp-env-secret-abcdefghijkl';
const FIXTURE = join(__dirname, '..', 'fixtures', 'mcp-server.js');
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
};
type McpFixture = Awaited<ReturnType<typeof startHttpServer>>;

/**
 * The MCP relay and launch endpoints and the `mcpServers` setting, tried from the attacker's side: who may use
 * them, where the relay may be made to go, where a stored secret may be sent, and that no answer ever holds one.
 * A real MCP server (the SDK's) stands in for the organization's, requiring its secret header.
 */
describe('MCP servers in the controls, and the MCP relay (e2e)', () => {
  let t: TestApp;
  let mcp: McpFixture;
  let owner: TestUser;
  let member: TestUser;
  let agent: Auth;
  let baseUrl: string;

  beforeAll(async () => {
    mcp = await startHttpServer({ header: 'X-Fixture-Secret', value: HEADER_SECRET });
    t = await startTestApp({ MCP_RELAY_ALLOWED_HOSTS: `127.0.0.1:${mcp.port}`, CONTROLS_CACHE_MS: '0' });
    baseUrl = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    owner = await createUser(t, Role.Owner);
    member = await createUser(t, Role.Member, { id: owner.organizationId, slug: owner.organizationSlug });
    agent = await agentOf(t, owner);
  });

  afterAll(async () => {
    await t?.close();
    await mcp?.close();
  });

  beforeEach(() => (mcp.requests.length = 0));

  const remote = (extra: Json = {}) => ({ name: 'remote', transport: 'http', url: mcp.url, headers: { 'X-Fixture-Secret': HEADER_SECRET }, ...extra });
  const local = (extra: Json = {}) => ({
    name: 'local',
    transport: 'stdio',
    command: process.execPath,
    args: [FIXTURE],
    env: { FIXTURE_TOKEN: ENV_SECRET },
    ...extra,
  });
  const change = (settings: Json, by = owner) => t.http().patch('/api/v0/organization/enterprise-controls').set(by.auth).send({ settings });
  const controls = async () => (await t.http().get('/api/v0/organization/enterprise-controls').set(owner.auth).expect(200)).body as Json;
  const relay = (auth: Auth, name = 'remote') =>
    t.http().post(`/api/v0/agent/mcp/${name}`).set(auth).set('accept', 'application/json, text/event-stream').send(INITIALIZE);
  const launch = (auth: Auth, name = 'local') => t.http().get(`/api/v0/agent/mcp/${name}/launch`).set(auth);

  async function connect(auth: Auth, name = 'remote') {
    const client = new Client({ name: 'test', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/api/v0/agent/mcp/${name}`), { requestInit: { headers: auth } });
    await client.connect(transport);
    return { client, transport };
  }

  it("lets an agent's MCP client use the server through the relay, which alone adds the secret header; no answer holds a secret", async () => {
    await change({ mcpServers: [remote(), local()] }).expect(200);
    const { client, transport } = await connect(agent);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['echo', 'add', 'env', 'write_file', 'fail', 'drop_tables']);
    expect(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })).toEqual({ content: [{ type: 'text', text: '5' }] });
    expect(await client.callTool({ name: 'fail', arguments: {} })).toMatchObject({ isError: true, content: [{ text: 'it failed on purpose' }] });
    // A server that quotes a header value back (here, by echoing it) has it masked on the way to the agent.
    expect(await client.callTool({ name: 'echo', arguments: { text: `the key is ${HEADER_SECRET}` } })).toEqual({
      content: [{ type: 'text', text: 'echo: the key is ****6789' }],
    });
    const session = transport.sessionId;
    expect(session).toEqual(expect.any(String));
    await transport.terminateSession();
    await client.close();

    // What reached the server: the secret header, the MCP session, and never the agent's token.
    expect(mcp.requests.length).toBeGreaterThanOrEqual(4);
    for (const request of mcp.requests) {
      expect(request.headers['x-fixture-secret']).toBe(HEADER_SECRET);
      expect(request.headers.authorization).toBeUndefined();
      expect(JSON.stringify(request.headers)).not.toContain(agent.Authorization.slice(7));
    }
    expect(mcp.requests.filter((r) => r.method === 'POST' && r.headers['mcp-session-id'] === session).length).toBeGreaterThanOrEqual(2);
    expect(mcp.requests.filter((r) => r.method === 'POST').every((r) => r.headers['mcp-protocol-version'] !== undefined || !r.headers['mcp-session-id'])).toBe(
      true,
    );
    expect(mcp.requests.some((r) => r.method === 'DELETE' && r.headers['mcp-session-id'] === session)).toBe(true);
    // The standalone stream is not relayed: GET is 405, and no GET reached the server.
    expect(mcp.requests.some((r) => r.method === 'GET')).toBe(false);
    expect((await t.http().get('/api/v0/agent/mcp/remote').set(agent)).status).toBe(405);

    // Every answer that shows the settings shows the secrets masked: controls, history, a revision's diff, the agent policy.
    const answers = [
      await controls(),
      (await t.http().get('/api/v0/organization/enterprise-controls/history').set(owner.auth).expect(200)).body,
      (
        await t
          .http()
          .get(`/api/v0/organization/enterprise-controls/history/${(await controls()).revision}`)
          .set(owner.auth)
          .expect(200)
      ).body,
      (await t.http().get('/api/v0/agent/policy').set(agent).expect(200)).body,
      (await t.http().get('/api/v0/agent/policy').set(member.auth).expect(200)).body,
    ];
    for (const answer of answers) {
      const text = JSON.stringify(answer);
      expect(text).not.toContain(HEADER_SECRET);
      expect(text).not.toContain(ENV_SECRET);
      expect(text).toContain('****6789');
      expect(text).toContain('****ijkl');
    }
    expect(answers[3].mcpServers).toEqual([
      { ...remote(), url: mcp.url, headers: { 'X-Fixture-Secret': '****6789' } },
      { ...local(), env: { FIXTURE_TOKEN: '****ijkl' } },
    ]);
    expect(answers[2].diff).toEqual(expect.arrayContaining([expect.objectContaining({ path: '/mcpServers' })]));
  });

  it("passes on a notification's 202 with no body, refuses a request without a body, and documents both", async () => {
    await change({ mcpServers: [remote()] }).expect(200);
    const initialized = await relay(agent).expect(200);
    const headers = { 'mcp-session-id': String(initialized.headers['mcp-session-id']), 'mcp-protocol-version': '2025-06-18' };
    const notified = await t
      .http()
      .post('/api/v0/agent/mcp/remote')
      .set(agent)
      .set(headers)
      .set('accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect({ status: notified.status, body: notified.text }).toEqual({ status: 202, body: '' });
    const sent = mcp.requests.length;
    expectInvalid(await t.http().post('/api/v0/agent/mcp/remote').set(agent).set(headers), 'body');
    expect(mcp.requests).toHaveLength(sent);

    const paths = (await t.http().get('/docs-json')).body.paths as Record<string, Record<string, { requestBody?: { required?: boolean }; responses: Json }>>;
    const relayed = paths['/api/v0/agent/mcp/{serverName}'];
    expect(relayed.post.requestBody?.required).toBe(true);
    expect(Object.keys(relayed.post.responses)).toEqual(expect.arrayContaining(['200', '202', 'default']));
    // DELETE goes through the same relay, so it fails as POST does.
    expect(Object.keys(relayed.delete.responses)).toEqual(expect.arrayContaining(['200', '502', '503', '504', 'default']));
  });

  it("reveals a stdio server's env only to an agent token, on the launch endpoint", async () => {
    await change({ mcpServers: [remote(), local()] }).expect(200);
    expect((await launch(agent).expect(200)).body).toEqual({ command: process.execPath, args: [FIXTURE], env: { FIXTURE_TOKEN: ENV_SECRET } });
  });

  it('answers 403 to user credentials on the relay and the launch endpoint, and sends nothing', async () => {
    await change({ mcpServers: [remote(), local()] }).expect(200);
    for (const auth of [owner.auth, member.auth]) {
      expectV0Error(await relay(auth), 403, 'agent_token_required');
      expectV0Error(await t.http().delete('/api/v0/agent/mcp/remote').set(auth), 403, 'agent_token_required');
      const refused = await launch(auth);
      expectV0Error(refused, 403, 'agent_token_required');
      expect(JSON.stringify(refused.body)).not.toContain(ENV_SECRET);
    }
    expect(mcp.requests).toEqual([]);
    // Another organization's agent knows no server of this one.
    const stranger = await agentOf(t, await createUser(t, Role.Owner));
    expectV0Error(await relay(stranger), 404, 'mcp_server_not_found');
    expectV0Error(await launch(stranger), 404, 'mcp_server_not_found');
    expect(mcp.requests).toEqual([]);
  });

  it("applies the caller's mcpPolicy: MCP off, or a server the allowlist leaves out, is 403; an unknown server 404; the other transport 409", async () => {
    await change({ mcpServers: [remote(), local()], mcpPolicy: { enabled: false, allowlist: [] } }).expect(200);
    expectV0Error(await relay(agent), 403, 'mcp_not_allowed');
    expectV0Error(await launch(agent), 403, 'mcp_not_allowed');
    await change({ mcpPolicy: { enabled: true, allowlist: ['local'] } }).expect(200);
    expectV0Error(await relay(agent), 403, 'mcp_not_allowed');
    await launch(agent).expect(200);
    await change({ mcpPolicy: { enabled: true, allowlist: [] } }).expect(200);
    expectV0Error(await relay(agent, 'nothing'), 404, 'mcp_server_not_found');
    expectV0Error(await relay(agent, 'local'), 409, 'mcp_transport_mismatch');
    expectV0Error(await launch(agent, 'remote'), 409, 'mcp_transport_mismatch');
    expect(mcp.requests).toEqual([]);
  });

  it("holds a stolen agent token to the server's allowedTools: a call of another tool, alone or in a batch, is 403 and never sent", async () => {
    await change({ mcpServers: [remote({ allowedTools: ['echo', 'add'] })], mcpPolicy: { enabled: true, allowlist: [] } }).expect(200);
    const { client, transport } = await connect(agent);
    expect(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })).toEqual({ content: [{ type: 'text', text: '5' }] });
    const sent = mcp.requests.length;
    const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
    const raw = (body: object) =>
      t
        .http()
        .post('/api/v0/agent/mcp/remote')
        .set(agent)
        .set('accept', 'application/json, text/event-stream')
        .set('mcp-session-id', transport.sessionId!)
        .set('mcp-protocol-version', '2025-06-18')
        .send(body);

    // What a modified agent, or anyone holding its token, would send: the model never saw drop_tables, the relay refuses it.
    const alone = await raw(call(7, 'drop_tables'));
    expectV0Error(alone, 403, 'mcp_tool_not_allowed');
    expect(alone.body.detail).toContain('"drop_tables"');
    expect(alone.body.metadata).toMatchObject({ serverName: 'remote', tool: 'drop_tables' });
    // Hidden behind an allowed call in a batch, or with a name that is not a string: refused whole.
    expectV0Error(await raw([call(8, 'add'), call(9, 'drop_tables')]), 403, 'mcp_tool_not_allowed');
    const listed = await raw({ ...call(10, 'add'), params: { name: ['add'] } });
    expectV0Error(listed, 403, 'mcp_tool_not_allowed');
    expect(listed.body.metadata.tool).toBe('["add"]');
    expectV0Error(await raw({ ...call(12, 'add'), params: {} }), 403, 'mcp_tool_not_allowed');
    await expect(client.callTool({ name: 'drop_tables', arguments: {} })).rejects.toThrow(/mcp_tool_not_allowed|403/);
    expect(mcp.requests.length).toBe(sent);

    // An empty list allows no tool at all; the listing still passes (the agent offers only the allowed tools).
    await change({ mcpServers: [remote({ allowedTools: [] })] }).expect(200);
    expectV0Error(await raw(call(11, 'add')), 403, 'mcp_tool_not_allowed');
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await transport.terminateSession();
    await client.close();
  });

  it("keeps to the organization's networkPolicy.allowedIps too: a server the operator allows, outside them, is refused unsent", async () => {
    await change({ mcpServers: [remote()], mcpPolicy: { enabled: true, allowlist: [] }, networkPolicy: { allowedIps: ['10.0.0.0/8'] } }).expect(200);
    try {
      const res = await relay(agent);
      expectV0Error(res, 403, 'mcp_address_refused');
      expect(res.body.detail).toMatch(/networkPolicy\.allowedIps: 10\.0\.0\.0\/8/);
      expect(mcp.requests).toEqual([]);
      await change({ networkPolicy: { allowedIps: ['127.0.0.0/8'] } }).expect(200);
      await relay(agent).expect(200);
      expect(mcp.requests).toHaveLength(1);
    } finally {
      await change({ networkPolicy: { allowedIps: [] } }).expect(200);
    }
  });

  it('refuses loopback, private and metadata addresses not in MCP_RELAY_ALLOWED_HOSTS before connecting, and does not follow a redirect', async () => {
    for (const url of [
      `http://localhost:${mcp.port}/mcp`,
      `http://127.0.0.1:${mcp.port + 1}/mcp`,
      `http://[::1]:${mcp.port}/mcp`,
      `http://2130706434:${mcp.port}/mcp`,
      'http://10.0.0.1/mcp',
      'http://169.254.169.254/latest/meta-data',
      `${baseUrl}/api/v0/agent/mcp/remote`,
    ]) {
      await change({ mcpServers: [{ name: 'remote', transport: 'http', url }] }).expect(200);
      const res = await relay(agent);
      expectV0Error(res, 403, 'mcp_address_refused');
    }
    expect(mcp.requests).toEqual([]);

    await change({
      mcpServers: [{ name: 'remote', transport: 'http', url: `http://127.0.0.1:${mcp.port}/redirect`, headers: { 'X-Fixture-Secret': HEADER_SECRET } }],
    }).expect(200);
    const redirected = await relay(agent);
    expectV0Error(redirected, 502, 'mcp_redirected');
    expect(mcp.requests.map((r) => r.url)).toEqual(['/redirect']);
  });

  it('keeps masked secrets sent back while the destination is the same, and refuses them for a moved url or command (400)', async () => {
    await change({ mcpServers: [remote(), local()] }).expect(200);
    const answered = (await controls()).settings.mcpServers as Json[];
    // Sent back as read, with another change: the secrets are kept.
    await change({ mcpServers: answered.map((server) => ({ ...server, allowedTools: ['echo'] })) }).expect(200);
    expect((await launch(agent).expect(200)).body.env).toEqual({ FIXTURE_TOKEN: ENV_SECRET });
    expect((await relay(agent)).status).toBe(200);
    expect(mcp.requests.at(-1)?.headers['x-fixture-secret']).toBe(HEADER_SECRET);

    // Moving the url (same host, another port the operator might allow) with the masked value: the secret stays behind.
    const moved = await change({ mcpServers: [{ ...answered[0], url: `http://127.0.0.1:${mcp.port + 1}/mcp` }, answered[1]] });
    expectInvalid(moved, 'settings.mcpServers[0].headers.X-Fixture-Secret');
    expect(JSON.stringify(moved.body)).not.toContain(HEADER_SECRET);
    // Another command for the stdio server, or other arguments: its env stays behind too.
    expectInvalid(await change({ mcpServers: [answered[0], { ...answered[1], command: '/bin/sh' }] }), 'settings.mcpServers[1].env.FIXTURE_TOKEN');
    expectInvalid(await change({ mcpServers: [answered[0], { ...answered[1], args: ['/tmp/elsewhere.js'] }] }), 'settings.mcpServers[1].env.FIXTURE_TOKEN');
    // A masked value for a server that never had one, or under another name.
    expectInvalid(await change({ mcpServers: [{ ...answered[0], name: 'renamed' }] }), 'settings.mcpServers[0].headers.X-Fixture-Secret');
    // Nothing changed.
    expect((await launch(agent).expect(200)).body.env).toEqual({ FIXTURE_TOKEN: ENV_SECRET });
    // Moved with the secret in full: accepted.
    await change({ mcpServers: [{ ...answered[0], url: `http://127.0.0.1:${mcp.port}/mcp?moved=1`, headers: { 'X-Fixture-Secret': HEADER_SECRET } }] }).expect(
      200,
    );
  });

  it('checks the definitions: names, transports, headers, env names, duplicates', async () => {
    expectInvalid(await change({ mcpServers: [remote({ name: 'has space' })] }), 'settings.mcpServers[0].name');
    expectInvalid(await change({ mcpServers: [remote({ name: 'x'.repeat(65) })] }), 'settings.mcpServers[0].name');
    expectInvalid(await change({ mcpServers: [remote(), remote()] }), 'settings.mcpServers[1].name');
    expect((await change({ mcpServers: [remote({ command: 'sh' })] })).status).toBe(400);
    expect((await change({ mcpServers: [{ name: 'x', transport: 'ws', url: mcp.url }] })).status).toBe(400);
    expect((await change({ mcpServers: [local({ env: { 'BAD-NAME': 'v' } })] })).status).toBe(400);
    expect((await change({ mcpServers: [remote({ url: 'ftp://example.com/mcp' })] })).status).toBe(400);
    expectInvalid(await change({ mcpServers: [remote({ headers: { 'Mcp-Session-Id': 'x' } })] }), 'settings.mcpServers[0].headers.Mcp-Session-Id');
    expectInvalid(await change({ mcpServers: [remote({ headers: { Host: 'evil.example' } })] }), 'settings.mcpServers[0].headers.Host');
    expect((await change({ mcpServers: Array.from({ length: 51 }, (_, i) => remote({ name: `s${i}` })) })).status).toBe(400);
    // Absent (null removes it) is no servers.
    await change({ mcpServers: null }).expect(200);
    expect((await controls()).settings.mcpServers).toBeUndefined();
    expect((await t.http().get('/api/v0/agent/policy').set(agent).expect(200)).body.mcpServers).toEqual([]);
  });
});

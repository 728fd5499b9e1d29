import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentPolicy } from '../../contract/agent-channel';
import { missingSandboxPackages } from '../sandbox/sandbox';
import { McpConnections } from './mcp-connections';
import { McpTool } from './mcp-tools';

const FIXTURE = join(__dirname, '..', '..', '..', 'test', 'fixtures', 'mcp-server.js');
const missing = missingSandboxPackages();
// Without the programs the sandboxed test proves nothing: CI must have them (it fails), a laptop may not (it is skipped).
const itSandboxed = missing.length === 0 || process.env.CI ? it : it.skip;

/**
 * The agent's MCP connections to a real stdio MCP server (the test fixture) that a stand-in platform says how to
 * launch: started in the sandbox when the policy requires one (and not at all where none can be made), remade when
 * its launch changes or it died, reused otherwise.
 */
describe('McpConnections (stdio)', () => {
  let root: string;
  let workspace: string;
  let platform: Server;
  let platformUrl: string;
  let launch: { command: string; args: string[]; env: Record<string, string> };
  let launches = 0;
  let connections: McpConnections;

  beforeAll(async () => {
    platform = createServer((request, response) => {
      const ok = request.url === '/api/v0/agent/mcp/local/launch' && request.headers.authorization === 'Bearer cpt_test';
      if (ok) launches++;
      response.writeHead(ok ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(ok ? launch : { detail: 'no such server' }));
    });
    await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve));
    platformUrl = `http://127.0.0.1:${(platform.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise((resolve) => platform.close(resolve)));

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'mcp-connections-'));
    workspace = join(root, 'workspace');
    mkdirSync(workspace);
    launch = { command: process.execPath, args: [FIXTURE], env: { FIXTURE_TOKEN: 'one' } };
    launches = 0;
    connections = new McpConnections({ platformUrl, token: 'cpt_test', workspace, log: () => undefined });
  });

  afterEach(async () => {
    await connections.close();
    rmSync(root, { recursive: true, force: true });
  });

  const policy = (fields: Partial<AgentPolicy> = {}, sandbox = false): AgentPolicy =>
    ({
      mcpPolicy: { enabled: true, allowlist: [] },
      mcpServers: [{ name: 'local', transport: 'stdio', command: 'node', env: { FIXTURE_TOKEN: '****' } }],
      networkPolicy: { allowedIps: [] },
      sandbox: {
        enabled: sandbox,
        filesystem: { allowWrite: [], allowRead: [], denyWrite: [], denyRead: [] },
        network: { allowedDomains: [], allowUnixSockets: [], allowAllUnixSockets: false, allowLocalBinding: false },
      },
      ...fields,
    }) as AgentPolicy;
  const tool = (tools: McpTool[], name: string) => tools.find((candidate) => candidate.tool === name)!;
  const run = async (toolName: string, input: Record<string, unknown>, fields: Partial<AgentPolicy> = {}, sandbox = false) => {
    const { tools, problems } = await connections.toolset(policy(fields, sandbox));
    expect(problems).toEqual([]);
    return connections.call(tool(tools, toolName), input, new AbortController().signal);
  };

  it('starts the server unsandboxed when the policy asks for no sandbox: it writes where it likes', async () => {
    const outside = join(root, 'outside.txt');
    expect(await run('write_file', { path: outside, text: 'x' })).toEqual({ isError: false, content: `wrote ${outside}` });
    expect(readFileSync(outside, 'utf8')).toBe('x');
  });

  itSandboxed('starts the server in the sandbox when the policy requires one: it writes in the workspace only', async () => {
    const outside = join(root, 'outside.txt');
    const refused = await run('write_file', { path: outside, text: 'x' }, {}, true);
    expect(refused).toMatchObject({ isError: true, content: expect.stringMatching(/read-only file system|EROFS|EACCES|permission denied/i) });
    expect(existsSync(outside)).toBe(false);
    expect(await run('write_file', { path: join(workspace, 'inside.txt'), text: 'y' }, {}, true)).toMatchObject({ isError: false });
    expect(await run('env', { name: 'FIXTURE_TOKEN' }, {}, true)).toEqual({ isError: false, content: 'FIXTURE_TOKEN=one' });
  });

  it('does not start the server at all where the required sandbox cannot be made', async () => {
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      const { tools, problems } = await connections.toolset(policy({}, true));
      expect(tools).toEqual([]);
      expect(problems).toEqual([expect.stringMatching(/MCP server local is unavailable.*requires commands to run in a sandbox.*bubblewrap/s)]);
    } finally {
      process.env.PATH = path;
    }
  });

  it('keeps the connection across turns, and remakes it when the launch changes or the server died', async () => {
    expect(await run('env', { name: 'FIXTURE_TOKEN' })).toMatchObject({ content: 'FIXTURE_TOKEN=one' });
    const first = connections as unknown as { connections: Map<string, { client: { transport?: { pid: number | null } } }> };
    const pid = first.connections.get('local')!.client.transport!.pid!;
    expect(await run('env', { name: 'FIXTURE_TOKEN' })).toMatchObject({ content: 'FIXTURE_TOKEN=one' });
    expect(first.connections.get('local')!.client.transport!.pid).toBe(pid);

    launch = { ...launch, env: { FIXTURE_TOKEN: 'two' } };
    expect(await run('env', { name: 'FIXTURE_TOKEN' })).toMatchObject({ content: 'FIXTURE_TOKEN=two' });
    const second = first.connections.get('local')!.client.transport!.pid!;
    expect(second).not.toBe(pid);

    process.kill(second, 'SIGKILL');
    for (let i = 0; i < 100 && !(first.connections.get('local') as unknown as { closed: boolean }).closed; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await run('env', { name: 'FIXTURE_TOKEN' })).toMatchObject({ content: 'FIXTURE_TOKEN=two' });
    expect(first.connections.get('local')!.client.transport!.pid).not.toBe(second);
    expect(launches).toBe(4);
  });

  it("reports a server that fails to start with the end of what it wrote to stderr, and offers the others' tools", async () => {
    launch = { command: process.execPath, args: ['-e', 'console.error("cannot open the database"); process.exit(3)'], env: {} };
    const { tools, problems } = await connections.toolset(policy());
    expect(tools).toEqual([]);
    expect(problems).toEqual([expect.stringMatching(/MCP server local is unavailable for this turn.*its stderr ends: cannot open the database/s)]);
  });

  it('closes and forgets a server the policy no longer allows, and reports a launch the platform refuses', async () => {
    await run('env', { name: 'FIXTURE_TOKEN' });
    const { tools } = await connections.toolset(policy({ mcpPolicy: { enabled: true, allowlist: ['other'] } }));
    expect(tools).toEqual([]);
    const { problems } = await connections.toolset(policy({ mcpServers: [{ name: 'unknown', transport: 'stdio', command: 'x' }] }));
    expect(problems).toEqual([expect.stringMatching(/MCP server unknown is unavailable.*refused to say how to start it \(404: no such server\)/)]);
  });

  it('stops connecting at once when the turn is interrupted: a server that never answers does not hold the turn for 30 s', async () => {
    // Started, but silent: it never answers `initialize`.
    launch = { command: process.execPath, args: ['-e', 'setInterval(() => undefined, 1000)'], env: {} };
    const interrupt = new AbortController();
    setTimeout(() => interrupt.abort(), 300);
    const started = Date.now();
    const { tools, problems } = await connections.toolset(policy(), undefined, interrupt.signal);
    expect(Date.now() - started).toBeLessThan(5_000);
    // Nothing to offer and nobody to blame: the turn stops anyway.
    expect([tools, problems]).toEqual([[], []]);
  });
});

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentProcessFixture, call, completion, Json, ScriptedModel } from '../utils/fixtures/agent-process';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the fixture is plain Node, so that agents can start it over stdio
const { startHttpServer } = require('../fixtures/mcp-server.js') as {
  startHttpServer: (secret: { header: string; value: string }) => Promise<{ url: string; port: number; requests: Json[]; close: () => Promise<void> }>;
};

// eslint-disable-next-line @typescript-eslint/no-require-imports -- plain Node, as the fixture it serves
const { startOAuthMcpServer } = require('../fixtures/mcp-oauth-server.js') as {
  startOAuthMcpServer: () => Promise<{
    url: string;
    requests: Json[];
    provider: { access: Map<string, unknown>; refresh: Map<string, unknown> };
    close: () => Promise<void>;
  }>;
};

const HEADER_SECRET = 'mcp-header-secret-0123456789';
const ENV_SECRET = 'mcp-env-secret-abcdefghijkl';
const FIXTURE = join(__dirname, '..', 'fixtures', 'mcp-server.js');

/**
 * The reference agent as a real process with the organization's MCP servers: a real MCP server started by the agent
 * over stdio, and one over Streamable HTTP reached through the platform's relay, their tools called by a scripted model.
 */
describe('The agent process with MCP servers', () => {
  let mcp: Awaited<ReturnType<typeof startHttpServer>>;
  beforeAll(async () => (mcp = await startHttpServer({ header: 'X-Fixture-Secret', value: HEADER_SECRET })));
  afterAll(() => mcp?.close());
  // The fixture's HTTP server is on loopback: the operator allows it for the MCP relay.
  const fixture = agentProcessFixture({ MCP_RELAY_ALLOWED_HOSTS: '127.0.0.1' });
  const { computerWithAgent, say, untilIdle, messages } = fixture;

  const servers = () => [
    { name: 'echo', transport: 'stdio', command: process.execPath, args: [FIXTURE], env: { FIXTURE_TOKEN: ENV_SECRET }, allowedTools: ['echo', 'env'] },
    { name: 'remote', transport: 'http', url: mcp.url, headers: { 'X-Fixture-Secret': HEADER_SECRET }, allowedTools: ['add', 'fail'] },
  ];
  const offered = (request: Json) => (request.tools as Json[]).map((tool) => tool.function.name as string);

  it("offers the servers' allowed tools beside the workspace tools, and runs the model's calls on them", async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role === 'user')
        return completion({
          tool_calls: [
            call('call_1', 'mcp__echo__echo', { text: 'hello' }),
            call('call_2', 'mcp__echo__env', { name: 'FIXTURE_TOKEN' }),
            call('call_3', 'mcp__echo__env', { name: 'AGENT_STATE_DIR' }),
            call('call_4', 'mcp__remote__add', { a: 2, b: 3 }),
            call('call_5', 'mcp__remote__fail', {}),
            call('call_6', 'mcp__echo__drop_tables', {}),
          ],
        });
      return completion({ content: 'Done.' });
    });
    const modelUrl = await model.start();
    try {
      const { owner, computerId, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      await fixture.t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { mcpServers: servers() } })
        .expect(200);
      const sessionId = await say(computerId, 'Use the MCP tools.');
      await untilIdle(sessionId, output);

      const tools = offered(model.requests[0]);
      expect(tools).toEqual(expect.arrayContaining(['Read', 'Execute', 'Task', 'mcp__echo__echo', 'mcp__echo__env', 'mcp__remote__add', 'mcp__remote__fail']));
      expect(tools.filter((name) => name.includes('drop_tables'))).toEqual([]);
      const echo = (model.requests[0].tools as Json[]).find((tool) => tool.function.name === 'mcp__echo__echo')!;
      expect(echo.function).toEqual({
        name: 'mcp__echo__echo',
        description: 'Echoes the text back. (tool echo of the MCP server echo)',
        parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
      });

      const all = await messages(sessionId);
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      const results = all[2].content as Json[];
      expect(results.map((r) => [r.toolUseId, r.isError, r.content])).toEqual([
        ['call_1', false, 'echo: hello'],
        // The stdio server got its env from the launch endpoint, and nothing of the agent's own configuration.
        ['call_2', false, `FIXTURE_TOKEN=${ENV_SECRET}`],
        ['call_3', false, 'AGENT_STATE_DIR is unset'],
        ['call_4', false, '5'],
        ['call_5', true, 'it failed on purpose'],
        ['call_6', true, expect.stringContaining('There is no tool named mcp__echo__drop_tables')],
      ]);
      // The HTTP server got its secret header from the relay; the agent never had it.
      expect(mcp.requests.length).toBeGreaterThan(0);
      expect(mcp.requests.every((r) => r.headers['x-fixture-secret'] === HEADER_SECRET && r.headers.authorization === undefined)).toBe(true);
      expect(output()).not.toContain(HEADER_SECRET);
      expect(JSON.stringify(all)).not.toContain(HEADER_SECRET);
    } finally {
      await model.stop();
    }
  });

  it('lets a PreToolUse hook block an MCP call by its mcp__ name, and keeps the connections for the next turn', async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role === 'user')
        return completion({ tool_calls: [call('call_1', 'mcp__remote__add', { a: 1, b: 1 }), call('call_2', 'mcp__echo__echo', { text: 'x' })] });
      return completion({ content: 'Done.' });
    });
    const modelUrl = await model.start();
    try {
      const { owner, computerId, home, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const seen = join(home, 'pre.json');
      writeFileSync(
        join(home, 'hooks.json'),
        JSON.stringify({
          PreToolUse: [{ matcher: 'mcp__remote__.*', hooks: [{ type: 'command', command: `cat > ${seen}; echo 'no remote tools' >&2; exit 2` }] }],
        }),
      );
      await fixture.t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { mcpServers: servers() } })
        .expect(200);
      const sessionId = await say(computerId, 'Add, then echo.');
      await untilIdle(sessionId, output);
      mcp.requests.length = 0;

      const results = (await messages(sessionId)).find((m) => m.role === 'tool')!.content as Json[];
      expect(results[0]).toMatchObject({ toolUseId: 'call_1', isError: true, content: expect.stringContaining('no remote tools') });
      expect(results[1]).toMatchObject({ toolUseId: 'call_2', isError: false, content: 'echo: x' });
      expect(JSON.parse(readFileSync(seen, 'utf8'))).toMatchObject({ tool_name: 'mcp__remote__add', tool_input: { a: 1, b: 1 } });

      // The next turn lists the tools again on the same MCP session (no new initialize).
      await fixture.t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Again.' }).expect(200);
      await untilIdle(sessionId, output);
      const methods = mcp.requests.filter((r) => r.method === 'POST').map((r) => r.headers['mcp-session-id'] !== undefined);
      expect(methods.length).toBeGreaterThan(0);
      expect(methods.every(Boolean)).toBe(true);
    } finally {
      await model.stop();
    }
  });

  it('says when a server cannot be used and goes on without its tools; mcpPolicy off offers none', async () => {
    const model = new ScriptedModel(() => completion({ content: 'Done.' }));
    const modelUrl = await model.start();
    try {
      const { owner, computerId, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const broken = { name: 'broken', transport: 'stdio', command: '/nonexistent/mcp-server' };
      await fixture.t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { mcpServers: [...servers(), broken] } })
        .expect(200);
      const sessionId = await say(computerId, 'Hello.');
      await untilIdle(sessionId, output);
      const all = await messages(sessionId);
      expect(all.map((m) => m.role)).toEqual(['user', 'system', 'assistant']);
      expect(all[1].content[0].text).toMatch(/The MCP server broken is unavailable for this turn/);
      expect(offered(model.requests[0])).toEqual(expect.arrayContaining(['mcp__echo__echo', 'mcp__remote__add']));

      await fixture.t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { mcpPolicy: { enabled: false, allowlist: [] } } })
        .expect(200);
      await fixture.t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Again.' }).expect(200);
      await untilIdle(sessionId, output);
      expect(offered(model.requests.at(-1)!).filter((name) => name.startsWith('mcp__'))).toEqual([]);
    } finally {
      await model.stop();
    }
  });

  it("applies the session's settings: subagents get the MCP tools, autonomyLevel and mcpAutonomyOverrides (by name, then by URL), disabledToolIds, and spec mode offers none", async () => {
    const model = new ScriptedModel((request) => {
      const messages = request.messages as Json[];
      const last = messages[messages.length - 1];
      const subagent = /subagent/.test(messages[0].content as string);
      if (subagent && last.role === 'user')
        return completion({ tool_calls: [call('s1', 'mcp__remote__add', { a: 4, b: 5 }), call('s2', 'mcp__echo__echo', { text: 'no' })] });
      if (subagent)
        return completion({
          content: `sub saw: ${messages
            .filter((m) => m.role === 'tool')
            .map((m) => m.content)
            .join(' | ')}`,
        });
      if (last.role === 'user' && last.content === 'Delegate.')
        return completion({ tool_calls: [call('t1', 'Task', { description: 'add', prompt: 'Add 4 and 5.' })] });
      return completion({ content: 'Done.' });
    });
    const modelUrl = await model.start();
    try {
      const { owner, computerId, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      await fixture.t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { mcpServers: servers(), mcpAutonomyOverrides: { remote: 'medium' } } })
        .expect(200);
      const session = await fixture.t
        .http()
        .post('/api/v0/sessions')
        .set(owner.auth)
        .send({ computerId, sessionSettings: { autonomyLevel: 'medium', disabledToolIds: ['mcp__remote__fail'] } })
        .expect(201);
      const sessionId = session.body.sessionId as string;
      await fixture.t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Delegate.' }).expect(200);
      await untilIdle(sessionId, output);

      expect(offered(model.requests[0])).toEqual(expect.arrayContaining(['mcp__echo__echo', 'mcp__remote__add']));
      expect(offered(model.requests[0])).not.toContain('mcp__remote__fail');
      const sub = model.requests.find((request) => /subagent/.test(request.messages[0].content as string))!;
      expect(offered(sub)).toEqual(expect.arrayContaining(['mcp__echo__echo', 'mcp__remote__add']));
      // medium: the remote server's tools (override medium) run; the echo server's (no override: high) are refused.
      const task = (await messages(sessionId)).filter((m) => m.role === 'tool').pop()!.content[0] as Json;
      expect(task).toMatchObject({ toolUseId: 't1', isError: false });
      expect(task.content).toMatch(/^sub saw: 9 \| Refused by the session's autonomyLevel medium: the tools of the MCP server echo need high/);

      // The same level given by URL pattern instead of by name.
      await fixture.t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { mcpAutonomyOverrides: {}, mcpAutonomyUrlOverrides: [{ urlPattern: `${new URL(mcp.url).origin}/*`, level: 'medium' }] } })
        .expect(200);
      await fixture.t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Delegate.' }).expect(200);
      await untilIdle(sessionId, output);
      const byUrl = (await messages(sessionId)).filter((m) => m.role === 'tool').pop()!.content[0] as Json;
      expect(byUrl.content).toMatch(/^sub saw: 9 \| Refused by the session's autonomyLevel medium: the tools of the MCP server echo need high/);

      // Spec mode: only the tools that read, no MCP tools.
      await fixture.t
        .http()
        .patch(`/api/v0/sessions/${sessionId}`)
        .set(owner.auth)
        .send({ sessionSettings: { interactionMode: 'spec' } })
        .expect(200);
      await fixture.t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Plan.' }).expect(200);
      await untilIdle(sessionId, output);
      expect(offered(model.requests.at(-1)!)).toEqual(['Read', 'LS', 'Glob', 'Grep', 'WebFetch', 'TodoWrite', 'Task']);
    } finally {
      await model.stop();
    }
  });

  it('uses a server behind OAuth once an admin signed in, and the token is in none of its environment, output or messages', async () => {
    const remote = await startOAuthMcpServer();
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role === 'user')
        return completion({ tool_calls: [call('call_1', 'mcp__remote__add', { a: 2, b: 3 }), call('call_2', 'Execute', { command: 'env' })] });
      return completion({ content: 'Done.' });
    });
    const modelUrl = await model.start();
    try {
      const { owner, computerId, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const http = () => fixture.t.http();
      await http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { mcpServers: [{ name: 'remote', transport: 'http', url: remote.url }] } })
        .expect(200);
      // The admin signs in (the authorization server answers at once), the browser comes back to the callback.
      const started = await http().post('/api/v0/organization/enterprise-controls/mcp-servers/remote/oauth').set(owner.auth).send({}).expect(200);
      const back = new URL((await fetch(started.body.authorizationUrl as string, { redirect: 'manual' })).headers.get('location')!);
      await http().get(`${back.pathname}${back.search}`).expect(303);
      const [token] = [...remote.provider.access.keys()];
      const [refresh] = [...remote.provider.refresh.keys()];

      const sessionId = await say(computerId, 'Add, then show the environment.');
      await untilIdle(sessionId, output);
      const all = await messages(sessionId);
      const results = all[2].content as Json[];
      expect(results.map((r) => [r.toolUseId, r.isError, r.content])).toEqual([
        ['call_1', false, '5'],
        ['call_2', false, expect.stringContaining('PATH=')],
      ]);
      expect(remote.requests.length).toBeGreaterThan(0);
      expect(remote.requests.every((r) => r.headers.authorization === `Bearer ${token}`)).toBe(true);
      for (const text of [output(), JSON.stringify(all), JSON.stringify(model.requests)]) {
        expect(text).not.toContain(token);
        expect(text).not.toContain(refresh);
      }
    } finally {
      await model.stop();
      await remote.close();
    }
  });
});

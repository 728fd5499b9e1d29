import { ACTIVITY_FACTS_LISTENER } from '../../src/modules/analytics/activity-facts.listener';
import { DurableListeners } from '../../src/platform/events';
import { ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, request as httpRequest, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { itInSandbox } from '../utils/sandbox';
import { createTestDatabase } from '../utils/test-database';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;

const ROOT = join(__dirname, '..', '..');

/**
 * A model vendor at the edge of the world: an OpenAI-compatible Chat Completions server on loopback
 * that answers from a script, looking at the conversation it is sent.
 */
class ScriptedModel {
  readonly requests: Json[] = [];
  readonly headers: IncomingMessage['headers'][] = [];
  private server!: Server;

  constructor(private readonly answer: (request: Json) => Json | Promise<Json>) {}

  async start(): Promise<string> {
    this.server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const request = JSON.parse(body) as Json;
        this.requests.push(request);
        this.headers.push(req.headers);
        void Promise.resolve(this.answer(request)).then((answer) => {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify(answer));
        });
      });
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * The network between the agent and the server: forwards requests to the server's current port,
 * resets connections while there is none (a restart), and can swallow the answer of a request the
 * server did handle (a response lost on the way back).
 */
class FlakyProxy {
  target: number | null = null;
  /** Requests (`METHOD /path` patterns) whose next answer is dropped after the server handled them. */
  readonly dropNext = new Set<RegExp>();
  readonly dropped: string[] = [];
  private server!: Server;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      if (this.target === null) return req.socket.destroy();
      const upstream = httpRequest({ host: '127.0.0.1', port: this.target, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        const rule = [...this.dropNext].find((r) => r.test(`${req.method} ${req.url}`));
        if (rule) {
          this.dropNext.delete(rule);
          this.dropped.push(`${req.method} ${req.url}`);
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => req.socket.destroy());
      req.pipe(upstream);
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const portOf = async (app: TestApp) => Number(new URL(await app.app.getUrl()).port);

const completion = (message: Json, usage = { prompt_tokens: 120, completion_tokens: 30 }) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  choices: [{ index: 0, finish_reason: message.tool_calls ? 'tool_calls' : 'stop', message: { role: 'assistant', content: null, ...message } }],
  usage,
});
const call = (id: string, name: string, args: Json) => ({ id, type: 'function', function: { name, arguments: JSON.stringify(args) } });

/** The reference agent as a real process, against the real server and a scripted model on loopback. */
describe('The agent process', () => {
  let t: TestApp;
  let owner: TestUser;
  let baseUrl: string;
  const agents: ChildProcess[] = [];
  const folders: string[] = [];

  beforeAll(async () => {
    // The scripted models are on loopback: the operator allows it for the relay.
    t = await startTestApp({ CONTROLS_CACHE_MS: '0', MODEL_RELAY_ALLOWED_HOSTS: '127.0.0.1' });
    baseUrl = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
  });

  afterAll(async () => {
    for (const agent of agents) agent.kill('SIGKILL');
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
    await t.close();
  });

  /** A fresh organization with an owner and a BYOM computer whose agent runs in a fresh workspace. */
  async function computerWithAgent(env: Record<string, string>, url = baseUrl) {
    owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    const computer = await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' })
      .expect(201);
    const home = mkdtempSync(join(tmpdir(), 'ap-agent-'));
    folders.push(home);
    const token = computer.body.agentToken as string;
    return { computerId: computer.body.id as string, token, workspace: join(home, 'workspace'), home, ...startAgent(token, home, env, url) };
  }

  /** An agent process for the computer whose token this is, working in `home`/workspace. */
  function startAgent(token: string, home: string, env: Record<string, string>, url = baseUrl) {
    const child = spawn(process.execPath, [join(ROOT, 'dist/agent/main.js'), '--url', url, '--token', token, '--workspace', join(home, 'workspace')], {
      // No hooks unless a test writes them: never the developer's own ~/.agent-platform.
      env: { PATH: process.env.PATH ?? '', HOME: home, AGENT_STATE_DIR: join(home, 'state'), AGENT_HOOKS_FILE: join(home, 'hooks.json'), ...env },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    agents.push(child);
    return { child, output: () => output };
  }

  async function say(computerId: string, text: string): Promise<string> {
    const session = await t.http().post('/api/v0/sessions').set(owner.auth).send({ computerId }).expect(201);
    await t.http().post(`/api/v0/sessions/${session.body.sessionId}/messages`).set(owner.auth).send({ text, computerId }).expect(200);
    return session.body.sessionId as string;
  }

  async function untilIdle(sessionId: string, output: () => string): Promise<Json> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const res = await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200);
      if (res.body.status === 'idle') return res.body as Json;
      if (Date.now() > deadline) throw new Error(`session still ${res.body.status}; agent output:\n${output()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  const messages = async (sessionId: string): Promise<Json[]> =>
    (await t.http().get(`/api/v0/sessions/${sessionId}/messages?limit=100`).set(owner.auth).expect(200)).body.messages as Json[];

  it('without a model, ends the turn with a message that says how to configure one', async () => {
    const { computerId, output } = await computerWithAgent({});
    const sessionId = await say(computerId, 'Add a README');
    await untilIdle(sessionId, output);
    const all = await messages(sessionId);
    expect(all.map((m) => m.role)).toEqual(['user', 'system']);
    expect(all[1].content[0].text).toMatch(/No model is configured.*AGENT_MODEL_BASE_URL/s);
  });

  it('runs the model with the tools: creates a file, refuses a denied command, answers, and reports usage', async () => {
    await createOrganization(t); // keep ids apart
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role === 'user') {
        return completion({
          reasoning_content: 'Create the file, then clean up.',
          tool_calls: [
            call('call_1', 'Create', { file_path: 'notes/hello.txt', content: 'hello from the agent\n' }),
            call('call_2', 'Execute', { command: 'rm -rf notes' }),
          ],
        });
      }
      return completion({ content: 'Created notes/hello.txt; the cleanup command was refused.' }, { prompt_tokens: 200, completion_tokens: 12 });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, output } = await computerWithAgent({
        AGENT_MODEL_BASE_URL: modelUrl,
        AGENT_MODEL: 'scripted-1',
        AGENT_MODEL_API_KEY: 'sk-test',
      });
      await t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { commandDenylist: ['rm'] } })
        .expect(200);
      const sessionId = await say(computerId, 'Write a note, then remove the notes folder.');
      const session = await untilIdle(sessionId, output);

      expect(readFileSync(join(workspace, 'notes/hello.txt'), 'utf8')).toBe('hello from the agent\n');
      expect(existsSync(join(workspace, 'notes'))).toBe(true);
      const all = await messages(sessionId);
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      const [, first, results, last] = all;
      expect(first).toMatchObject({
        modelId: 'scripted-1',
        chatCompletionReasoningField: 'reasoning_content',
        chatCompletionReasoningContent: 'Create the file, then clean up.',
      });
      expect(first.content[0]).toMatchObject({
        type: 'thinking',
        thinking: 'Create the file, then clean up.',
        signatureProvider: 'generic-chat-completion-api',
      });
      expect(first.content.slice(1)).toEqual([
        { type: 'tool_use', id: 'call_1', name: 'Create', input: { file_path: 'notes/hello.txt', content: 'hello from the agent\n' } },
        { type: 'tool_use', id: 'call_2', name: 'Execute', input: { command: 'rm -rf notes' } },
      ]);
      expect(results.content[0]).toMatchObject({ type: 'tool_result', toolUseId: 'call_1', isError: false });
      expect(results.content[1]).toMatchObject({ type: 'tool_result', toolUseId: 'call_2', isError: true });
      expect(results.content[1].content).toMatch(/commandDenylist/);
      expect(last.content).toEqual([{ type: 'text', text: 'Created notes/hello.txt; the cleanup command was refused.' }]);
      expect(session.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 320, outputTokens: 42 });

      // The model got the tools, the key, and the tool results of its calls.
      expect(model.requests[0].tools.map((tool: Json) => tool.function.name)).toEqual([
        'Read',
        'LS',
        'Glob',
        'Grep',
        'Create',
        'Edit',
        'ApplyPatch',
        'Execute',
        'Task',
      ]);
      expect(model.requests[0].model).toBe('scripted-1');
      const toolMessages = (model.requests[1].messages as Json[]).filter((m) => m.role === 'tool');
      expect(toolMessages.map((m) => m.tool_call_id)).toEqual(['call_1', 'call_2']);
    } finally {
      await model.stop();
    }
  });

  it('survives a server restart mid-turn and a lost answer, without losing or repeating a message', async () => {
    const database = await createTestDatabase();
    let server = await startTestApp({}, database);
    const proxy = new FlakyProxy();
    const proxyUrl = await proxy.start();
    proxy.target = await portOf(server);
    const model = new ScriptedModel(async (request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role !== 'user') return completion({ content: 'Done.' });
      // The server restarts while the model thinks; the answer of the agent's next write is then lost on the way back.
      proxy.target = null;
      await server.close();
      server = await startTestApp({}, database);
      proxy.target = await portOf(server);
      proxy.dropNext.add(/^POST \/api\/v0\/agent\/sessions\/[^/]+\/usage$/);
      proxy.dropNext.add(/^POST \/api\/v0\/agent\/sessions\/[^/]+\/messages$/);
      return completion({ tool_calls: [call('call_1', 'Create', { file_path: 'once.txt', content: 'once\n' })] });
    });
    const modelUrl = await model.start();
    const outer = t;
    try {
      t = server;
      const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' }, proxyUrl);
      const sessionId = await say(computerId, 'Write once.txt');
      const deadline = Date.now() + 30_000;
      let status = '';
      while (Date.now() < deadline) {
        // While the server restarts, polls may fail: only an answer counts.
        const res = await server
          .http()
          .get(`/api/v0/sessions/${sessionId}`)
          .set(owner.auth)
          .catch(() => null);
        if (res?.status === 200) status = res.body.status as string;
        if (status === 'idle') break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect([status, output()]).toEqual(['idle', expect.any(String)]);
      t = server;
      // The usage report and the assistant's message were handled, their answers lost, and retried under the same key.
      expect(proxy.dropped.map((line) => line.split('/').pop())).toEqual(['usage', 'messages']);
      const session = (await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200)).body as Json;
      expect(session.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 240, outputTokens: 60 });
      expect(output()).toMatch(/retrying/);
      const all = await messages(sessionId);
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(all[2].content[0]).toMatchObject({ type: 'tool_result', toolUseId: 'call_1', isError: false });
      expect(readFileSync(join(workspace, 'once.txt'), 'utf8')).toBe('once\n');
    } finally {
      t = outer;
      await model.stop();
      await proxy.stop();
      await server.close();
      await database.drop();
    }
  });

  it('picks the conversation up after a restart: a new agent process sends the model what was said before', async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role === 'user' && last.content === 'Remember the number 42.')
        return completion({ tool_calls: [call('call_1', 'Create', { file_path: 'n.txt', content: '42' })] });
      if (last.role === 'tool') return completion({ content: 'Noted 42.' });
      return completion({ content: 'It was 42.' });
    });
    const modelUrl = await model.start();
    try {
      const env = { AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' };
      const first = await computerWithAgent(env);
      const sessionId = await say(first.computerId, 'Remember the number 42.');
      await untilIdle(sessionId, first.output);
      first.child.kill('SIGKILL');
      await once(first.child, 'exit');

      const second = startAgent(first.token, first.home, env);
      await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Which number?' }).expect(200);
      await untilIdle(sessionId, second.output);
      const sent = (model.requests[model.requests.length - 1].messages as Json[]).slice(1); // after the system prompt
      expect(JSON.parse(sent[1].tool_calls[0].function.arguments)).toEqual({ file_path: 'n.txt', content: '42' }); // stored as jsonb: key order may change
      sent[1].tool_calls[0].function.arguments = '(checked)';
      expect(sent).toEqual([
        { role: 'user', content: 'Remember the number 42.' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'Create', arguments: '(checked)' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: expect.stringContaining('n.txt') },
        { role: 'assistant', content: 'Noted 42.' },
        { role: 'user', content: 'Which number?' },
      ]);
      expect((await messages(sessionId)).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'assistant']);
    } finally {
      await model.stop();
    }
  });

  it('runs a subagent for the Task tool: its work is recorded hidden, its report is the result, and SubagentStop fires', async () => {
    const model = new ScriptedModel((request) => {
      const messages = request.messages as Json[];
      const last = messages[messages.length - 1];
      const subagent = String(messages[0].content).startsWith('You are a subagent');
      if (subagent) {
        if (last.role === 'user') return completion({ tool_calls: [call('sub_1', 'Create', { file_path: 'sub.txt', content: 'from the subagent\n' })] });
        return completion({ content: 'Created sub.txt.' });
      }
      if (last.role === 'user')
        return completion({ tool_calls: [call('task_1', 'Task', { description: 'Write sub.txt', prompt: 'Create sub.txt saying hello.' })] });
      return completion({ content: `The subagent says: ${String(last.content)}` });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, home, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const seen = join(home, 'subagent-stop.json');
      writeFileSync(join(home, 'hooks.json'), JSON.stringify({ hooks: { SubagentStop: [{ hooks: [{ type: 'command', command: `cat > ${seen}` }] }] } }));
      const sessionId = await say(computerId, 'Delegate writing sub.txt.');
      await untilIdle(sessionId, output);

      expect(readFileSync(join(workspace, 'sub.txt'), 'utf8')).toBe('from the subagent\n');
      // The subagent started from the prompt alone, with the workspace tools but no Task of its own.
      const first = model.requests.find((r) => String(r.messages[0].content).startsWith('You are a subagent'))!;
      expect(first.messages.slice(1)).toEqual([{ role: 'user', content: 'Create sub.txt saying hello.' }]);
      expect(first.tools.map((tool: Json) => tool.function.name)).not.toContain('Task');

      const all = (await messages(sessionId)).filter((m) => !m.hookEventName);
      expect(all.map((m) => [m.role, m.hiddenFromUserViews === true])).toEqual([
        ['user', false],
        ['assistant', false], // Task
        ['assistant', true], // the subagent's Create
        ['tool', true],
        ['assistant', true], // its report
        ['tool', false], // the Task result
        ['assistant', false],
      ]);
      expect(all[5].content[0]).toMatchObject({ type: 'tool_result', toolUseId: 'task_1', isError: false, content: 'Created sub.txt.' });
      expect(all[6].content).toEqual([{ type: 'text', text: 'The subagent says: Created sub.txt.' }]);
      expect(JSON.parse(readFileSync(seen, 'utf8'))).toMatchObject({ hook_event_name: 'SubagentStop', session_id: sessionId, stop_hook_active: false });
    } finally {
      await model.stop();
    }
  });

  it("compacts a conversation grown past AGENT_CONTEXT_CHARS into the model's summary, after PreCompact", async () => {
    const big = 'x'.repeat(3_000);
    const model = new ScriptedModel((request) => {
      const messages = request.messages as Json[];
      const last = messages[messages.length - 1];
      if (String(last.content).startsWith('Summarise the conversation so far')) {
        expect(request.tools).toBeUndefined();
        return completion({ content: 'SUMMARY: the user sent a long text; the agent read notes.txt.' });
      }
      if (last.role === 'user' && String(last.content).startsWith('Read'))
        return completion({ tool_calls: [call('call_1', 'Read', { file_path: 'notes.txt' })] });
      return completion({ content: 'Done.' });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, home, output } = await computerWithAgent({
        AGENT_MODEL_BASE_URL: modelUrl,
        AGENT_MODEL: 'scripted-1',
        AGENT_CONTEXT_CHARS: '5000',
      });
      mkdirSync(workspace, { recursive: true });
      writeFileSync(join(workspace, 'notes.txt'), `${big}\n`);
      const seen = join(home, 'pre-compact.json');
      writeFileSync(join(home, 'hooks.json'), JSON.stringify({ PreCompact: [{ hooks: [{ type: 'command', command: `cat > ${seen}` }] }] }));
      const sessionId = await say(computerId, `Read notes.txt. ${big}`);
      await untilIdle(sessionId, output);

      // The file read pushed the conversation past 5,000 characters: the next call was the summary, then the work went on from it.
      const summarising = model.requests.findIndex((r) => String(r.messages[r.messages.length - 1].content).startsWith('Summarise the conversation so far'));
      expect(summarising).toBe(1);
      expect(model.requests[2].messages.slice(1)).toEqual([
        { role: 'user', content: expect.stringMatching(/^The conversation so far was compacted.*\n\nSUMMARY: the user sent a long text/s) },
      ]);
      const all = await messages(sessionId);
      expect(all.find((m) => m.role === 'system' && !m.hookEventName)?.content[0].text).toMatch(/grown past 5000 characters, so it was compacted/);
      expect(all.filter((m) => m.hookEventName === 'PreCompact').map((m) => m.hookStatus)).toEqual(['executing', 'completed']);
      expect(JSON.parse(readFileSync(seen, 'utf8'))).toMatchObject({
        hook_event_name: 'PreCompact',
        trigger: 'auto',
        custom_instructions: null,
        session_id: sessionId,
      });
      // The summary call counts in the session's usage too: three model calls.
      const session = (await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200)).body as Json;
      expect(session.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 360, outputTokens: 90 });
    } finally {
      await model.stop();
    }
  });

  it('on SIGTERM, cuts the turn under way short, says so, fires SessionEnd, ends the turn and exits', async () => {
    let release: () => void = () => undefined;
    const model = new ScriptedModel(() => new Promise<Json>((resolve) => (release = () => resolve(completion({ content: 'too late' })))));
    const modelUrl = await model.start();
    try {
      const { computerId, home, child, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const seen = join(home, 'session-end.json');
      writeFileSync(join(home, 'hooks.json'), JSON.stringify({ SessionEnd: [{ hooks: [{ type: 'command', command: `cat > ${seen}` }] }] }));
      const sessionId = await say(computerId, 'Think for a long time.');
      for (let i = 0; i < 100 && model.requests.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(model.requests).toHaveLength(1);

      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const [code] = (await exited) as [number | null];
      expect(code).toBe(0);
      const session = (await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200)).body as Json;
      expect([session.status, output()]).toEqual(['idle', expect.any(String)]);
      const all = await messages(sessionId);
      expect(all[1]).toMatchObject({ role: 'system', content: [{ type: 'text', text: expect.stringMatching(/stopped before the task was done/) }] });
      expect(all.filter((m) => m.hookEventName === 'SessionEnd').map((m) => m.hookStatus)).toEqual(['executing', 'completed']);
      expect(JSON.parse(readFileSync(seen, 'utf8'))).toMatchObject({ hook_event_name: 'SessionEnd', reason: 'other', session_id: sessionId });
    } finally {
      release();
      await model.stop();
    }
  });

  it('leaves a turn the server took back (its lease ran out and another agent took it) without writing to it', async () => {
    const server = await startTestApp({ AGENT_LEASE_MS: '1000' });
    let release: () => void = () => undefined;
    const model = new ScriptedModel(() => new Promise<Json>((resolve) => (release = () => resolve(completion({ content: 'too late' })))));
    const modelUrl = await model.start();
    const outer = t;
    try {
      t = server;
      const { computerId, output, child } = await computerWithAgent(
        { AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' },
        (await server.app.getUrl()).replace('[::1]', '127.0.0.1'),
      );
      const sessionId = await say(computerId, 'Think slowly.');
      for (let i = 0; i < 100 && model.requests.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      // The agent goes silent (its heartbeats, every second, stop) past the lease, and another agent takes the turn.
      child.kill('SIGSTOP');
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      const taken = await t.http().post('/api/v0/agent/claims').set(owner.auth).send({ computerId }).expect(200);
      expect(taken.body.work).toMatchObject({ sessionId });
      child.kill('SIGCONT');

      release();
      for (let i = 0; i < 100 && !/taken back/.test(output()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(output()).toMatch(new RegExp(`session ${sessionId}: the turn was taken back`));
      expect((await messages(sessionId)).map((m) => m.role)).toEqual(['user']);
      const session = (await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200)).body as Json;
      expect(session.status).toBe('running');
      await t.http().post(`/api/v0/agent/sessions/${sessionId}/end-turn`).set(owner.auth).send({ turnId: taken.body.work.turnId }).expect(200);
    } finally {
      t = outer;
      release();
      await model.stop();
      await server.close();
    }
  });

  it("uses the organization's custom model through the server's relay; its key never reaches the agent", async () => {
    const model: ScriptedModel = new ScriptedModel((request) =>
      // A vendor that quotes the key back in an error, as some do.
      request.echo
        ? { error: { message: `Incorrect API key provided: ${String(model.headers[model.headers.length - 1].authorization)}` } }
        : completion({ content: 'Hi from the team model.' }),
    );
    const modelUrl = await model.start();
    try {
      const { computerId, token, output } = await computerWithAgent({});
      const secret = 'sk-team-secret-1234567890';
      const customModels = [
        {
          id: 'team-model',
          model: 'vendor-x',
          baseUrl: modelUrl,
          apiKey: secret,
          extraHeaders: { 'x-team': 'blue' },
          extraArgs: { temperature: 0.2 },
          maxOutputTokens: 256,
        },
      ];
      await t.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).send({ settings: { customModels } }).expect(200);
      const sessionId = await say(computerId, 'Hello');
      const session = await untilIdle(sessionId, output);
      const all = await messages(sessionId);
      expect(all.map((m) => [m.role, m.modelId ?? null])).toEqual([
        ['user', null],
        ['assistant', 'team-model'],
      ]);
      expect(all[1].content).toEqual([{ type: 'text', text: 'Hi from the team model.' }]);
      expect(session.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 120, outputTokens: 30 });
      expect(model.requests[0]).toMatchObject({ model: 'vendor-x', temperature: 0.2, max_tokens: 256 });
      expect(model.requests[0].tools).toHaveLength(9);
      expect(model.headers[0]).toMatchObject({ authorization: `Bearer ${secret}`, 'x-team': 'blue' });
      expect(output()).not.toContain(secret);

      // The relay itself: the caller's model policy applies, unknown models are 404, and the vendor's answer passes through.
      const relay = (id: string) =>
        t
          .http()
          .post(`/api/v0/agent/models/${id}/chat/completions`)
          .set({ Authorization: `Bearer ${token}` });
      const ok = await relay('team-model')
        .send({ messages: [{ role: 'user', content: 'hi' }] })
        .expect(200);
      expect(ok.body.choices[0].message.content).toBe('Hi from the team model.');
      expect(JSON.stringify(ok.body)).not.toContain(secret);
      const quoted = await relay('team-model').send({ echo: true, messages: [] }).expect(200);
      expect(quoted.body.error.message).toBe('Incorrect API key provided: Bearer ****7890');
      expect((await relay('no-such-model').send({ messages: [] }).expect(404)).body.metadata.code).toBe('custom_model_not_found');
      expect((await relay('team-model').send([1, 2]).expect(400)).body.detail).toMatch(/body: must be a JSON object/);
      await t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { modelPolicy: { blockedModelIds: ['team-model'] } } })
        .expect(200);
      const blocked = await relay('team-model').send({ messages: [] }).expect(403);
      expect(blocked.body.metadata).toMatchObject({ code: 'model_not_allowed', rule: 'modelPolicy.blockedModelIds' });
      await model.stop();
      await t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { modelPolicy: { blockedModelIds: [] } } })
        .expect(200);
      expect((await relay('team-model').send({ messages: [] }).expect(503)).body.metadata.code).toBe('model_unreachable');
    } finally {
      await model.stop().catch(() => undefined);
    }
  });

  it("follows the session's settings: the custom model it names, and in spec mode only the tools that change nothing", async () => {
    const planner = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role === 'user') return completion({ tool_calls: [call('p1', 'Create', { file_path: 'plan.txt', content: 'x' }), call('p2', 'LS', {})] });
      return completion({ content: 'SPEC: add plan.txt.' });
    });
    const coder = new ScriptedModel(() => completion({ content: 'Coded.' }));
    const [plannerUrl, coderUrl] = [await planner.start(), await coder.start()];
    try {
      const { computerId, workspace, output } = await computerWithAgent({});
      const customModels = [
        { id: 'coder', model: 'vendor-c', baseUrl: coderUrl, apiKey: 'sk-coder-0000000000' },
        { id: 'planner', model: 'vendor-p', baseUrl: plannerUrl, apiKey: 'sk-planner-000000000' },
      ];
      await t.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).send({ settings: { customModels } }).expect(200);
      const session = await t
        .http()
        .post('/api/v0/sessions')
        .set(owner.auth)
        .send({ computerId, sessionSettings: { model: 'coder', specModeModel: 'planner', interactionMode: 'spec' } })
        .expect(201);
      const sessionId = session.body.sessionId as string;
      await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Plan a plan.txt' }).expect(200);
      await untilIdle(sessionId, output);

      // Spec mode: the spec model, told to plan, offered the read-only tools (and Task); a change it asks for anyway is refused.
      expect(coder.requests).toHaveLength(0);
      expect(planner.requests[0].tools.map((tool: Json) => tool.function.name)).toEqual(['Read', 'LS', 'Glob', 'Grep', 'Task']);
      expect(planner.requests[0].messages[0].content).toMatch(/spec mode/);
      const results = (await messages(sessionId)).find((m) => m.role === 'tool')!;
      expect(results.content[0]).toMatchObject({ toolUseId: 'p1', isError: true, content: expect.stringMatching(/^Create is not available in spec mode/) });
      expect(results.content[1]).toMatchObject({ toolUseId: 'p2', isError: false });
      expect(existsSync(join(workspace, 'plan.txt'))).toBe(false);

      // Out of spec mode: the session's model, with every tool.
      await t
        .http()
        .patch(`/api/v0/sessions/${sessionId}`)
        .set(owner.auth)
        .send({ sessionSettings: { interactionMode: 'auto' } })
        .expect(200);
      await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Go ahead' }).expect(200);
      await untilIdle(sessionId, output);
      expect(coder.requests).toHaveLength(1);
      expect(coder.requests[0]).toMatchObject({ model: 'vendor-c' });
      expect(coder.requests[0].tools).toHaveLength(9);
      expect(coder.requests[0].messages[0].content).not.toMatch(/spec mode/);
      const last = (await messages(sessionId)).pop()!;
      expect(last).toMatchObject({ role: 'assistant', modelId: 'coder', content: [{ type: 'text', text: 'Coded.' }] });
    } finally {
      await planner.stop();
      await coder.stop();
    }
  });

  it("keeps to the session's autonomyLevel: at low, file edits and commands that read, not a command that changes things", async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role !== 'user') return completion({ content: 'Done.' });
      return completion({
        tool_calls: [
          call('c1', 'Create', { file_path: 'a.txt', content: 'a\n' }),
          call('c2', 'Execute', { command: 'ls' }),
          call('c3', 'Execute', { command: 'touch b.txt' }),
        ],
      });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const session = await t
        .http()
        .post('/api/v0/sessions')
        .set(owner.auth)
        .send({ computerId, sessionSettings: { autonomyLevel: 'low' } })
        .expect(201);
      const sessionId = session.body.sessionId as string;
      await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Write and touch' }).expect(200);
      await untilIdle(sessionId, output);
      const [created, listed, touched] = (await messages(sessionId)).find((m) => m.role === 'tool')!.content as Json[];
      expect(created).toMatchObject({ isError: false });
      expect(listed).toMatchObject({ isError: false, content: 'a.txt\n[exit code 0]' });
      expect(touched).toMatchObject({
        isError: true,
        content: expect.stringMatching(/^Refused by the session's autonomyLevel low: it runs only commands that read/),
      });
      expect(existsSync(join(workspace, 'b.txt'))).toBe(false);
    } finally {
      await model.stop();
    }
  });

  describe('under the sandbox settings', () => {
    /** A model that runs each of `commands` with Execute, then answers. */
    const executing = (commands: string[]) =>
      new ScriptedModel((request) => {
        const last = request.messages[request.messages.length - 1] as Json;
        if (last.role === 'user') return completion({ tool_calls: commands.map((command, i) => call(`call_${i + 1}`, 'Execute', { command })) });
        return completion({ content: 'Done.' });
      });

    itInSandbox('runs commands in the OS sandbox: they write in the workspace, but not outside it, and cannot read a denied file', async () => {
      const home = mkdtempSync(join(tmpdir(), 'ap-outside-'));
      folders.push(home);
      writeFileSync(join(home, 'secret.txt'), 'the secret\n');
      const model = executing(['echo inside > made.txt && cat made.txt', `echo out > ${home}/escaped.txt`, `cat ${home}/secret.txt`]);
      const modelUrl = await model.start();
      try {
        const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
        await t
          .http()
          .patch('/api/v0/organization/enterprise-controls')
          .set(owner.auth)
          .send({ settings: { sandbox: { enabled: true, filesystem: { denyRead: [join(home, 'secret.txt')] } } } })
          .expect(200);
        const sessionId = await say(computerId, 'Write files and read the secret.');
        await untilIdle(sessionId, output);
        const [inside, outside, secret] = (await messages(sessionId)).find((m) => m.role === 'tool')!.content as Json[];
        expect(inside).toMatchObject({ isError: false, content: 'inside\n[exit code 0]' });
        expect(readFileSync(join(workspace, 'made.txt'), 'utf8')).toBe('inside\n');
        expect(outside).toMatchObject({ isError: true, content: expect.stringMatching(/Read-only file system/) });
        expect(existsSync(join(home, 'escaped.txt'))).toBe(false);
        expect(secret).toMatchObject({ isError: true, content: expect.stringMatching(/Permission denied/) });
        expect(secret.content).not.toContain('the secret');
      } finally {
        await model.stop();
      }
    });

    it('refuses commands, rather than running them unsandboxed, when the sandbox programs are missing', async () => {
      const model = executing(['touch escaped.txt']);
      const modelUrl = await model.start();
      try {
        // A PATH without bubblewrap, socat and ripgrep: the agent itself needs none of them.
        const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1', PATH: '/nonexistent' });
        await t
          .http()
          .patch('/api/v0/organization/enterprise-controls')
          .set(owner.auth)
          .send({ settings: { sandbox: { enabled: true } } })
          .expect(200);
        const sessionId = await say(computerId, 'Touch a file.');
        await untilIdle(sessionId, output);
        const results = (await messages(sessionId)).find((m) => m.role === 'tool')!;
        expect(results.content[0]).toMatchObject({
          toolUseId: 'call_1',
          isError: true,
          content: expect.stringMatching(/sandbox\.enabled.*bubblewrap, socat, ripgrep are not installed.*Nothing ran/),
        });
        expect(existsSync(join(workspace, 'escaped.txt'))).toBe(false);
      } finally {
        await model.stop();
      }
    });

    it('keeps to networkPolicy: a command naming an address outside it, and a model endpoint outside it, are refused', async () => {
      const model = executing(['curl -sS http://10.20.30.40/ > fetched.txt']);
      const modelUrl = await model.start();
      try {
        const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
        await t
          .http()
          .patch('/api/v0/organization/enterprise-controls')
          .set(owner.auth)
          .send({ settings: { networkPolicy: { allowedIps: ['127.0.0.0/8', '192.168.0.0/16'] } } })
          .expect(200);
        const sessionId = await say(computerId, 'Fetch a page.');
        await untilIdle(sessionId, output);
        const results = (await messages(sessionId)).find((m) => m.role === 'tool')!;
        expect(results.content[0]).toMatchObject({
          isError: true,
          content: expect.stringMatching(/networkPolicy\.allowedIps: 10\.20\.30\.40 is not among.*nothing ran/),
        });
        expect(existsSync(join(workspace, 'fetched.txt'))).toBe(false);

        // The model itself (on loopback) leaves the allowed addresses: the turn is refused before any request.
        await t
          .http()
          .patch('/api/v0/organization/enterprise-controls')
          .set(owner.auth)
          .send({ settings: { networkPolicy: { allowedIps: ['10.0.0.0/8'] } } })
          .expect(200);
        const asked = model.requests.length;
        const second = await say(computerId, 'Try again.');
        await untilIdle(second, output);
        const [, refusal] = await messages(second);
        expect(refusal).toMatchObject({
          role: 'system',
          content: [{ type: 'text', text: expect.stringMatching(/networkPolicy\.allowedIps: 127\.0\.0\.1 is not among.*cannot reach its model scripted-1/) }],
        });
        expect(model.requests.length).toBe(asked);
      } finally {
        await model.stop();
      }
    });
  });

  describe('hooks', () => {
    it('runs the configured commands on their events with the documented input, records them, and blocks only on exit 2', async () => {
      const model = new ScriptedModel((request) => {
        const last = request.messages[request.messages.length - 1] as Json;
        if (last.role === 'user')
          return completion({
            tool_calls: [call('call_1', 'Create', { file_path: 'a.txt', content: 'a' }), call('call_2', 'Execute', { command: 'echo ran > ran.txt' })],
          });
        return completion({ content: 'Done.' });
      });
      const modelUrl = await model.start();
      try {
        const { computerId, workspace, home, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
        const out = join(home, 'out');
        writeFileSync(
          join(home, 'hooks.json'),
          JSON.stringify({
            hooks: {
              UserPromptSubmit: [
                { hooks: [{ type: 'command', command: `mkdir -p ${out}; if grep -q forbidden; then echo 'no forbidden words' >&2; exit 2; fi` }] },
              ],
              PreToolUse: [{ matcher: 'Execute', hooks: [{ type: 'command', command: `cat > ${out}/pre.json; echo 'no shell today' >&2; exit 2` }] }],
              PostToolUse: [
                {
                  matcher: 'Create|Edit',
                  hooks: [
                    { type: 'command', command: `cat > ${out}/post.json; echo "$AGENT_PROJECT_DIR" > ${out}/project-dir.txt` },
                    { type: 'command', command: 'sleep 5', timeout: 1 },
                    { type: 'command', command: 'exit 3' },
                  ],
                },
                // The same command again, and an entry whose matcher selects no tool here: neither runs twice or at all.
                { matcher: 'Create', hooks: [{ type: 'command', command: 'exit 3' }] },
                { matcher: 'create', hooks: [{ type: 'command', command: `touch ${out}/case-insensitive` }] },
              ],
              Stop: [{ hooks: [{ type: 'command', command: `cat > ${out}/stop.json` }] }],
            },
          }),
        );
        const sessionId = await say(computerId, 'Create a.txt, then run a command.');
        await untilIdle(sessionId, output);

        expect(readFileSync(join(workspace, 'a.txt'), 'utf8')).toBe('a');
        expect(existsSync(join(workspace, 'ran.txt'))).toBe(false);
        const all = await messages(sessionId);
        const results = all.find((m) => m.role === 'tool')!;
        expect(results.content[1]).toMatchObject({ toolUseId: 'call_2', isError: true, content: expect.stringContaining('no shell today') });
        expect(all.filter((m) => m.role === 'assistant').pop()!.content).toEqual([{ type: 'text', text: 'Done.' }]);

        const pre = JSON.parse(readFileSync(join(out, 'pre.json'), 'utf8')) as Json;
        expect(pre).toMatchObject({
          hook_event_name: 'PreToolUse',
          session_id: sessionId,
          cwd: workspace,
          tool_name: 'Execute',
          tool_input: { command: 'echo ran > ran.txt' },
          tool_use_id: 'call_2',
          permission_mode: 'default',
        });
        expect(existsSync(pre.transcript_path as string)).toBe(true);
        const post = JSON.parse(readFileSync(join(out, 'post.json'), 'utf8')) as Json;
        expect(post).toMatchObject({
          hook_event_name: 'PostToolUse',
          tool_name: 'Create',
          tool_input: { file_path: 'a.txt' },
          tool_response: { isError: false },
        });
        expect(readFileSync(join(out, 'project-dir.txt'), 'utf8').trim()).toBe(workspace);
        expect(existsSync(join(out, 'case-insensitive'))).toBe(false);
        expect(JSON.parse(readFileSync(join(out, 'stop.json'), 'utf8'))).toMatchObject({ hook_event_name: 'Stop', session_id: sessionId });

        const hookMessages = all.filter((m) => m.hookEventName);
        expect(hookMessages.map((m) => [m.hookEventName, m.hookStatus])).toEqual([
          ['UserPromptSubmit', 'executing'],
          ['UserPromptSubmit', 'completed'],
          // Create: no PreToolUse hook matches it; its PostToolUse hooks run. Execute: blocked before it runs.
          ['PostToolUse', 'executing'],
          ['PostToolUse', 'error'],
          ['PreToolUse', 'executing'],
          ['PreToolUse', 'error'],
          ['Stop', 'executing'],
          ['Stop', 'completed'],
        ]);
        const postRun = hookMessages[3];
        expect(postRun).toMatchObject({
          hookMatcher: 'Create|Edit|Create',
          hookToolCallId: 'call_1',
          isParallelExecution: true,
          parallelGroupId: expect.any(String),
        });
        expect(postRun.hookCommands.map((c: Json) => c.command)).toHaveLength(3);
        expect(postRun.hookResults.map((r: Json) => r.exitCode)).toEqual([0, -1, 3]);
        expect(postRun.hookResults[1].stderr).toMatch(/killed after 1 s/);
        expect(postRun.hookEndTime - postRun.hookStartTime).toBeLessThan(4_000);

        // Exit 2 on UserPromptSubmit keeps the message from the model; the turn says so.
        const requestsBefore = model.requests.length;
        await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'say something forbidden' }).expect(200);
        await untilIdle(sessionId, output);
        expect(model.requests.length).toBe(requestsBefore);
        const after = await messages(sessionId);
        expect(after.filter((m) => m.role === 'system' && !m.hookEventName).map((m) => m.content[0].text)).toEqual([
          expect.stringMatching(/UserPromptSubmit hook blocked this message: no forbidden words/),
        ]);

        // Analytics count each run once, when it has ended: 2 + 1 + 3 + 1 commands.
        await t.app.get(DurableListeners).catchUp(ACTIVITY_FACTS_LISTENER, owner.organizationId);
        const hooks = (await t.app
          .get(DataSource)
          .query(`SELECT count(*)::int AS n FROM analytics_facts WHERE organization_id = $1 AND kind = 'hook'`, [owner.organizationId])) as Json[];
        expect(hooks[0].n).toBe(7);
      } finally {
        await model.stop();
      }
    });

    it('goes on without hooks, and says why, when the hooks file is invalid', async () => {
      const model = new ScriptedModel(() => completion({ content: 'Fine.' }));
      const modelUrl = await model.start();
      try {
        const { computerId, home, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
        writeFileSync(join(home, 'hooks.json'), JSON.stringify({ Stop: [{ matcher: 1, hooks: [{ type: 'shell', command: 'true' }] }] }));
        const sessionId = await say(computerId, 'Hello');
        await untilIdle(sessionId, output);
        const all = await messages(sessionId);
        expect(all.map((m) => m.role)).toEqual(['user', 'system', 'assistant']);
        expect(all[1].content[0].text).toMatch(/Hooks are off for this turn: the hooks file is invalid\. .*hooks\.json: .*\/Stop\/0\/matcher must be string/);
      } finally {
        await model.stop();
      }
    });
  });
});

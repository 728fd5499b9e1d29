import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, request as httpRequest, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ServerProcess, startServer } from '../utils/processes';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase } from '../utils/test-database';
import { agentProcessFixture, call, completion, Json, ScriptedModel } from '../utils/fixtures/agent-process';

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

/**
 * The reference agent as a real process, against the real server and a scripted model on loopback: what it does
 * when the server restarts, its answers are lost, it is restarted or stopped, or its turn is taken back.
 */
describe('The agent process', () => {
  const fixture = agentProcessFixture();
  const { computerWithAgent, startAgent, say, untilIdle, messages, folders } = fixture;
  let t: TestApp;
  beforeAll(() => (t = fixture.t));
  /** Points this file's requests and the fixture's calls at another app. */
  const use = (app: TestApp) => (t = fixture.t = app);

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
      use(server);
      const { owner, computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' }, proxyUrl);
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
      use(server);
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
      use(outer);
      await model.stop();
      await proxy.stop();
      await server.close();
      await database.drop();
    }
  });

  it('goes on with a turn across a SIGKILL of the real server process while its answer is on the way: writes wait for the server, heartbeats resume and hold the lease', async () => {
    const database = await createTestDatabase();
    // A short lease: were heartbeats not to resume after the restart, another agent could take the turn within the second model call.
    const env = { ...database.env, AGENT_LEASE_MS: '3000' };
    let server: ServerProcess = await startServer(['--demo'], env);
    const keys = JSON.parse(readFileSync(join(database.dataDir, 'demo-keys.json'), 'utf8')) as Record<string, Record<string, string>>;
    const auth = { Authorization: `Bearer ${keys.acme.owner}`, 'content-type': 'application/json' };
    const api = async (method: string, path: string, body?: object): Promise<{ status: number; body: Json }> => {
      const res = await fetch(`${server.url}${path}`, { method, headers: auth, body: body ? JSON.stringify(body) : undefined });
      return { status: res.status, body: (await res.json()) as Json };
    };
    const proxy = new FlakyProxy();
    const proxyUrl = await proxy.start();
    proxy.target = Number(new URL(server.url).port);
    let computerId = '';
    let restarted: Promise<void> = Promise.resolve();
    const claimedMeanwhile: Array<Json | null> = [];
    const model = new ScriptedModel(async (request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role === 'user') {
        // The server dies while the model thinks, and the answer comes back before it is up again: the agent's usage report
        // and its message wait for it (connection refused, then reset by the proxy).
        proxy.target = null;
        server.child.kill('SIGKILL');
        await once(server.child, 'exit');
        restarted = (async () => {
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          server = await startServer([], env);
          proxy.target = Number(new URL(server.url).port);
        })();
        return completion({ tool_calls: [call('call_1', 'Create', { file_path: 'once.txt', content: 'once\n' })] });
      }
      // Past the lease, someone else asks for the computer's work: the turn is still this agent's (its heartbeats renewed it).
      await restarted;
      for (let i = 0; i < 3; i++) {
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        claimedMeanwhile.push((await api('POST', '/api/v0/agent/claims', { computerId })).body.work as Json | null);
      }
      return completion({ content: 'Done.' });
    });
    const modelUrl = await model.start();
    try {
      const computer = await api('POST', '/api/v0/computers', { name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
      expect(computer.status).toBe(201);
      computerId = computer.body.id as string;
      const home = mkdtempSync(join(tmpdir(), 'ap-agent-'));
      folders.push(home);
      const { output } = startAgent(computer.body.agentToken as string, home, { AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' }, proxyUrl);
      // The demo's default model (model-a) is no model this agent has: the session names the agent's own.
      const { sessionId } = (await api('POST', '/api/v0/sessions', { computerId, sessionSettings: { model: 'scripted-1' } })).body as { sessionId: string };
      expect((await api('POST', `/api/v0/sessions/${sessionId}/messages`, { text: 'Write once.txt', computerId })).status).toBe(200);

      const deadline = Date.now() + 60_000;
      let session: Json = {};
      while (Date.now() < deadline) {
        session = await api('GET', `/api/v0/sessions/${sessionId}`).then(
          (res) => res.body,
          () => ({}),
        );
        if (session.status === 'idle') break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect([session.status, output()]).toEqual(['idle', expect.any(String)]);
      expect(output()).toMatch(/usage failed \(.*\); attempt 1, retrying/);
      expect(claimedMeanwhile).toEqual([null, null, null]);
      expect(session.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 240, outputTokens: 60 });
      const all = (await api('GET', `/api/v0/sessions/${sessionId}/messages?limit=100`)).body.messages as Json[];
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(all[3].content).toEqual([{ type: 'text', text: 'Done.' }]);
      expect(readFileSync(join(home, 'workspace', 'once.txt'), 'utf8')).toBe('once\n');
    } finally {
      await model.stop();
      await proxy.stop();
      await restarted.catch(() => undefined);
      await server.stop();
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
      await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(first.owner.auth).send({ text: 'Which number?' }).expect(200);
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

  it('on SIGTERM, cuts the turn under way short, says so, fires SessionEnd, ends the turn and exits', async () => {
    let release: () => void = () => undefined;
    const model = new ScriptedModel(() => new Promise<Json>((resolve) => (release = () => resolve(completion({ content: 'too late' })))));
    const modelUrl = await model.start();
    try {
      const { owner, computerId, home, child, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
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
      use(server);
      const { owner, computerId, output, child } = await computerWithAgent(
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
      use(outer);
      release();
      await model.stop();
      await server.close();
    }
  });
});

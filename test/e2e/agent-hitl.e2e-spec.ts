import { ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Role } from '../../src/modules/auth';
import { EventLog } from '../../src/platform/events';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { Body, ENDED_EARLY_MS, LONG_WAIT_MS, until } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';

const ROOT = join(__dirname, '..', '..');

/** A model vendor on loopback answering from a script; an answer may take as long as the script likes. */
class ScriptedModel {
  readonly requests: Body[] = [];
  private server!: Server;

  constructor(private readonly answer: (request: Body, n: number) => Body | Promise<Body>) {}

  async start(): Promise<string> {
    this.server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const request = JSON.parse(body) as Body;
        this.requests.push(request);
        void Promise.resolve(this.answer(request, this.requests.length)).then((answer) => {
          if (res.destroyed) return;
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
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const completion = (message: Body) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  choices: [{ index: 0, finish_reason: message.tool_calls ? 'tool_calls' : 'stop', message: { role: 'assistant', content: null, ...message } }],
  usage: { prompt_tokens: 10, completion_tokens: 5 },
});
const execute = (command: string) => ({
  tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'Execute', arguments: JSON.stringify({ command }) } }],
});
const lastOf = (request: Body) => request.messages[request.messages.length - 1] as Body;
const never = () => new Promise<Body>(() => undefined);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A person in the loop, end to end: the reference agent as a real process (dist/agent/main.js), the
 * real server, and a scripted model. A user interrupts a long model call and a long command, and
 * allows, denies or leaves unanswered a command the controls want approved.
 */
describe('A person in the loop of the agent process', () => {
  let t: TestApp;
  const agents: ChildProcess[] = [];
  const folders: string[] = [];
  const models: ScriptedModel[] = [];

  beforeAll(async () => {
    // A short lease: only the agent's heartbeats (every second) keep a turn that waits for a person.
    t = await startTestApp({ CONTROLS_CACHE_MS: '0', AGENT_LEASE_MS: '3000' });
  });

  afterAll(async () => {
    for (const agent of agents) agent.kill('SIGKILL');
    for (const model of models) await model.stop();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
    await t.close();
  });

  /** A fresh organization whose owner has a BYOM computer with an agent running against `model`. */
  async function agentWith(model: ScriptedModel, controls?: object) {
    models.push(model);
    const modelUrl = await model.start();
    const owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    if (controls) await t.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).send({ settings: controls }).expect(200);
    const computer = await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' })
      .expect(201);
    const home = mkdtempSync(join(tmpdir(), 'ap-hitl-'));
    folders.push(home);
    const url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    const workspace = join(home, 'workspace');
    const child = spawn(process.execPath, [join(ROOT, 'dist/agent/main.js'), '--url', url, '--workspace', workspace], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: home,
        AGENT_TOKEN: computer.body.agentToken as string,
        AGENT_STATE_DIR: join(home, 'state'),
        AGENT_HOOKS_FILE: join(home, 'hooks.json'),
        AGENT_MODEL_BASE_URL: modelUrl,
        AGENT_MODEL: 'scripted-1',
      },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    agents.push(child);
    return { owner, computerId: computer.body.id as string, workspace, output: () => output };
  }

  async function say(owner: TestUser, computerId: string, text: string, sessionSettings: object = {}): Promise<string> {
    const session = await t.http().post('/api/v0/sessions').set(owner.auth).send({ computerId, sessionSettings }).expect(201);
    await t.http().post(`/api/v0/sessions/${session.body.sessionId}/messages`).set(owner.auth).send({ text, computerId }).expect(200);
    return session.body.sessionId as string;
  }

  const session = async (owner: TestUser, sessionId: string): Promise<Body> =>
    (await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200)).body as Body;
  const messages = async (owner: TestUser, sessionId: string): Promise<Body[]> =>
    (await t.http().get(`/api/v0/sessions/${sessionId}/messages?limit=100`).set(owner.auth).expect(200)).body.messages as Body[];
  const untilIdle = (owner: TestUser, sessionId: string, output: () => string, timeoutMs = 20_000) =>
    until(
      () => session(owner, sessionId),
      (s) => s.status === 'idle',
      `the session to be idle; agent output:\n${output()}`,
      timeoutMs,
    );
  const eventsOf = async (owner: TestUser, sessionId: string) =>
    (await t.app.get(EventLog).read(owner.organizationId, { after: 0, limit: 1000 })).filter((e) => e.sessionId === sessionId);

  describe('interrupt', () => {
    it('during a long model call: the call is dropped, the turn ends with a note, idle within a few seconds', async () => {
      const model = new ScriptedModel(never);
      const { owner, computerId, output } = await agentWith(model);
      const sessionId = await say(owner, computerId, 'Think about it for a long time.');
      await until(
        () => model.requests.length,
        (n) => n === 1,
        'the model call to start',
        20_000,
      );

      const asked = Date.now();
      await t.http().post(`/api/v0/sessions/${sessionId}/interrupt`).set(owner.auth).expect(200);
      // Seen at the agent's next heartbeat (each second): the model's answer, which never comes, is not waited for.
      await untilIdle(owner, sessionId, output, LONG_WAIT_MS);
      expect(Date.now() - asked).toBeLessThan(ENDED_EARLY_MS);

      const all = await messages(owner, sessionId);
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(all[1].content[0].text).toMatch(/^Interrupted by a user/);
      const events = await eventsOf(owner, sessionId);
      expect(events.find((e) => e.type === 'turn.interrupted')).toMatchObject({ actor: { kind: 'user', userId: owner.userId } });
      expect(events.filter((e) => e.type === 'session.status_changed').pop()).toMatchObject({
        actor: { kind: 'computer', computerId },
        data: { from: 'running', to: 'idle' },
      });
      expect(model.requests).toHaveLength(1);
    });

    it('during a long command: its process is killed, its output so far is kept, idle within a few seconds', async () => {
      const model = new ScriptedModel((request) =>
        lastOf(request).role === 'user' ? completion(execute('echo started; echo $$ > tool.pid; exec sleep 30')) : never(),
      );
      const { owner, computerId, workspace, output } = await agentWith(model);
      const sessionId = await say(owner, computerId, 'Run the slow job.');
      const pidFile = join(workspace, 'tool.pid');
      await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', Boolean, 'the command to start', 20_000);
      const pid = Number(readFileSync(pidFile, 'utf8'));
      expect(alive(pid)).toBe(true);

      const asked = Date.now();
      await t.http().post(`/api/v0/sessions/${sessionId}/interrupt`).set(owner.auth).expect(200);
      // Killed, not waited for: the command would end by itself 30 s after it started.
      await untilIdle(owner, sessionId, output, LONG_WAIT_MS);
      expect(Date.now() - asked).toBeLessThan(ENDED_EARLY_MS);
      expect(alive(pid)).toBe(false);

      const all = await messages(owner, sessionId);
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(all[2].content[0]).toMatchObject({ type: 'tool_result', isError: true });
      expect(all[2].content[0].content).toMatch(/started[\s\S]*killed: the call was aborted/);
      expect(all[3].content[0].text).toMatch(/^Interrupted by a user/);
      // The model was not asked again after the interrupt.
      expect(model.requests).toHaveLength(1);
    });
  });

  describe('tool approval', () => {
    /** A model that runs `command` once, then answers with the tool's result in words. */
    const runsOnce = (command: string) =>
      new ScriptedModel((request) =>
        lastOf(request).role === 'user' ? completion(execute(command)) : completion({ content: `Result: ${lastOf(request).content}` }),
      );

    it('allowed: the session shows the wait, a user allows, and the command runs', async () => {
      const model = runsOnce('touch approved.txt');
      const { owner, computerId, workspace, output } = await agentWith(model, { toolApproval: { commandPatterns: ['touch *'] } });
      const sessionId = await say(owner, computerId, 'Create the file.');
      const waiting = await until(
        () => session(owner, sessionId),
        (s) => s.pendingToolApprovals === 1,
        `the approval request; agent output:\n${output()}`,
        20_000,
      );
      expect(waiting.status).toBe('running');
      const [approval] = (await t.http().get(`/api/v0/sessions/${sessionId}/tool-approvals`).set(owner.auth).expect(200)).body.toolApprovals as Body[];
      expect(approval).toMatchObject({
        toolName: 'Execute',
        toolCallId: 'call_1',
        summary: 'touch approved.txt',
        input: { command: 'touch approved.txt' },
        status: 'pending',
      });
      expect(existsSync(join(workspace, 'approved.txt'))).toBe(false);

      await t.http().post(`/api/v0/sessions/${sessionId}/tool-approvals/${approval.approvalId}`).set(owner.auth).send({ decision: 'allow' }).expect(200);
      await untilIdle(owner, sessionId, output);
      expect(existsSync(join(workspace, 'approved.txt'))).toBe(true);
      const types = (await eventsOf(owner, sessionId)).map((e) => e.type);
      expect(types).toEqual(expect.arrayContaining(['tool_approval.requested', 'tool_approval.resolved']));
    });

    it("denied: the command does not run, and the model gets the denial with the user's words", async () => {
      const model = runsOnce('touch denied.txt');
      const { owner, computerId, workspace, output } = await agentWith(model, { toolApproval: { commandPatterns: ['touch *'] } });
      const sessionId = await say(owner, computerId, 'Create the file.');
      await until(
        () => session(owner, sessionId),
        (s) => s.pendingToolApprovals === 1,
        `the approval request; agent output:\n${output()}`,
        20_000,
      );
      const [approval] = (await t.http().get(`/api/v0/sessions/${sessionId}/tool-approvals`).set(owner.auth).expect(200)).body.toolApprovals as Body[];
      await t
        .http()
        .post(`/api/v0/sessions/${sessionId}/tool-approvals/${approval.approvalId}`)
        .set(owner.auth)
        .send({ decision: 'deny', message: 'not in this folder' })
        .expect(200);
      await untilIdle(owner, sessionId, output);

      expect(existsSync(join(workspace, 'denied.txt'))).toBe(false);
      expect(model.requests).toHaveLength(2);
      expect(lastOf(model.requests[1])).toMatchObject({ role: 'tool', content: expect.stringMatching(/denied.*not in this folder/) });
      const all = await messages(owner, sessionId);
      expect(all.find((m) => m.role === 'tool')!.content[0]).toMatchObject({ isError: true, content: expect.stringMatching(/denied/) });
    });

    it("unanswered: denied after the session's timeout, with the lease held meanwhile", async () => {
      const model = runsOnce('touch late.txt');
      const { owner, computerId, workspace, output } = await agentWith(model, { toolApproval: { tools: ['Edit'] } });
      // The session adds the pattern and shortens the timeout.
      const sessionId = await say(owner, computerId, 'Create the file.', { toolApproval: { commandPatterns: ['touch *'], timeoutSeconds: 5 } });
      await until(
        () => session(owner, sessionId),
        (s) => s.pendingToolApprovals === 1,
        `the approval request; agent output:\n${output()}`,
        20_000,
      );
      // Past the 3 s lease, the waiting turn is still the agent's: nobody else may take it over.
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      expect((await t.http().post('/api/v0/agent/claims').set(owner.auth).send({ computerId }).expect(200)).body.work).toBeNull();
      expect((await session(owner, sessionId)).pendingToolApprovals).toBe(1);
      await untilIdle(owner, sessionId, output);

      expect(existsSync(join(workspace, 'late.txt'))).toBe(false);
      expect(lastOf(model.requests[1]).content).toMatch(/Nobody approved this call/);
      const resolved = (await eventsOf(owner, sessionId)).find((e) => e.type === 'tool_approval.resolved');
      expect(resolved).toMatchObject({ actor: { kind: 'system' }, data: { status: 'expired', allowed: false } });
    });

    it('a command the rules do not name runs without asking', async () => {
      const model = runsOnce('touch free.txt');
      const { owner, computerId, workspace, output } = await agentWith(model, { toolApproval: { commandPatterns: ['git push*'] } });
      const sessionId = await say(owner, computerId, 'Create the file.');
      await untilIdle(owner, sessionId, output);
      expect(existsSync(join(workspace, 'free.txt'))).toBe(true);
      expect((await eventsOf(owner, sessionId)).some((e) => e.type === 'tool_approval.requested')).toBe(false);
    });
  });
});

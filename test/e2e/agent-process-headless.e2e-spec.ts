import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { until } from '../utils/polling';
import { agentProcessFixture, call, completion, Json, ScriptedModel } from '../utils/fixtures/agent-process';

const MAIN = resolve(__dirname, '..', '..', 'dist', 'agent', 'main.js');

/** `agent-platform-agent exec ...` as a script runs it: its exit code, standard output and standard error. */
function exec(args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [MAIN, 'exec', ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: cwd, AGENT_STATE_DIR: join(cwd, 'state'), ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

/**
 * The agent's headless mode (`exec "task"`) as a real process: one task with the agent's tools and policy, printed
 * for a script, recorded on the server as a session of the computer while the organization's cloudSessionSync is on.
 */
describe('The agent process, headless (exec)', () => {
  const fixture = agentProcessFixture();
  const { computer, startAgent, setControls, messages, folders } = fixture;

  /** A model that runs `touch made.txt` with Execute, then answers. */
  const making = () =>
    new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role === 'user') return completion({ tool_calls: [call('call_1', 'Execute', { command: 'touch made.txt && echo made' })] });
      return completion({ content: 'Made the file.' });
    });

  it('records the run as a session of the computer, its turn taken by the run itself, and prints the result as JSON', async () => {
    const model = making();
    const modelUrl = await model.start();
    try {
      const { owner, computerId, home, token, tokenFile, url } = await computer();
      // The computer's own agent is running, waiting for work: it must not take the run.
      const daemonModel = new ScriptedModel(() => completion({ content: 'The daemon answered.' }));
      const daemonHome = mkdtempSync(join(tmpdir(), 'ap-daemon-'));
      folders.push(daemonHome);
      const daemon = startAgent(token, daemonHome, { AGENT_MODEL_BASE_URL: await daemonModel.start(), AGENT_MODEL: 'daemon-1' });
      await until(daemon.output, (text) => text.includes('connected as'), 'the computer agent to connect');
      const sessionsBefore = (await fixture.t.http().get('/api/v0/sessions').set(owner.auth).expect(200)).body.sessions as Json[];
      const run = await exec(
        ['--url', url, '--output', 'json', '--workspace', join(home, 'ws'), 'Make the file.'],
        { AGENT_TOKEN_FILE: tokenFile, AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' },
        home,
      );
      expect(run.code).toBe(0);
      const result = JSON.parse(run.stdout) as Json;
      expect(result).toMatchObject({ type: 'result', isError: false, result: 'Made the file.', inputTokens: 240, outputTokens: 60 });
      expect(existsSync(join(home, 'ws', 'made.txt'))).toBe(true);

      const sessionId = result.sessionId as string;
      const session = (await fixture.t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200)).body as Json;
      expect(session).toMatchObject({ computerId, status: 'idle', sessionSettings: { autonomyMode: 'unattended' } });
      const all = await messages(sessionId);
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(all[0].content).toEqual([{ type: 'text', text: 'Make the file.' }]);
      expect(all.filter((m) => m.role === 'assistant').map((m) => m.modelId)).toEqual(['scripted-1', 'scripted-1']);
      expect(daemonModel.requests).toHaveLength(0);
      await daemonModel.stop();
      expect(((await fixture.t.http().get('/api/v0/sessions').set(owner.auth).expect(200)).body.sessions as Json[]).length).toBe(sessionsBefore.length + 1);
      // Only the run's token may start such a session.
      const byUser = await fixture.t.http().post('/api/v0/agent/sessions').set(owner.auth).send({ text: 'hi' }).expect(403);
      expect(byUser.body.metadata.code).toBe('agent_token_required');
    } finally {
      await model.stop();
    }
  });

  it('keeps the run off the server while cloudSessionSync is off, under the organization policy still, streaming its events', async () => {
    const model = making();
    const modelUrl = await model.start();
    try {
      const { owner, home, tokenFile, token, url } = await computer();
      await setControls({ cloudSessionSync: false, commandDenylist: ['touch'] });
      const refused = await fixture.t
        .http()
        .post('/api/v0/agent/sessions')
        .set({ Authorization: `Bearer ${token}` })
        .send({ text: 'hi' })
        .expect(403);
      expect(refused.body.metadata.code).toBe('cloud_session_sync_off');
      const run = await exec(
        ['--url', url, '--output', 'stream-json', '--workspace', join(home, 'ws'), 'Make the file.'],
        { AGENT_TOKEN_FILE: tokenFile, AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' },
        home,
      );
      expect(run.code).toBe(0);
      const events = run.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Json);
      expect(events.map((event) => event.type)).toEqual(['message', 'message', 'message', 'result']);
      expect(events[1].message).toMatchObject({
        role: 'tool',
        content: [{ type: 'tool_result', isError: true, content: expect.stringContaining('commandDenylist') }],
      });
      expect(events.at(-1)).toMatchObject({ sessionId: null, isError: false, result: 'Made the file.' });
      // The organization's commandDenylist held: nothing was made, and nothing was recorded.
      expect(existsSync(join(home, 'ws', 'made.txt'))).toBe(false);
      expect((await fixture.t.http().get('/api/v0/sessions').set(owner.auth).expect(200)).body.sessions).toEqual([]);
      expect(run.stderr).toContain('cloudSessionSync is off: this run stays on this computer');
    } finally {
      await model.stop();
    }
  });

  it('runs without a server under a settings file, prints text, and exits 1 when the run fails', async () => {
    const model = making();
    const modelUrl = await model.start();
    try {
      const { home } = await computer();
      folders.push(home);
      const settings = join(home, 'policy.json');
      writeFileSync(settings, JSON.stringify({ commandDenylist: ['touch'] }));
      const run = await exec(
        ['--settings', settings, '--workspace', join(home, 'ws'), 'Make the file.'],
        { AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' },
        home,
      );
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(
        /^→ Execute \{"command":"touch made.txt && echo made"\}\n✗ Refused by the organization's commandDenylist[^\n]*\nMade the file\.\nDone\.\n$/,
      );
      expect(existsSync(join(home, 'ws', 'made.txt'))).toBe(false);

      // A model that refuses the request (400, not worth a retry): the run fails, and says why.
      const refusing = new ScriptedModel(() => ({ status: 400, body: { error: { message: 'context too long' } } }));
      const refusingUrl = await refusing.start();
      const failed = await exec(
        ['--output', 'json', '--workspace', join(home, 'ws'), 'Make the file.'],
        { AGENT_MODEL_BASE_URL: refusingUrl, AGENT_MODEL: 'scripted-1' },
        home,
      );
      await refusing.stop();
      expect(failed.code).toBe(1);
      expect(JSON.parse(failed.stdout)).toMatchObject({
        isError: true,
        sessionId: null,
        result: expect.stringMatching(/^The model failed: .*answered 400: .*context too long/),
      });
      const usage = await exec([], {}, home);
      expect(usage.code).toBe(64);
      expect(usage.stderr).toContain('exec takes one task');
    } finally {
      await model.stop();
    }
  });
});

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentProcessFixture, call, completion, Json, ScriptedModel } from '../utils/fixtures/agent-process';

const ROOT = join(__dirname, '..', '..');

/**
 * The reference agent as a real process: what it remembers across turns (the workspace's AGENTS.md and the
 * settings file's `instructions`, in its system prompt), and how it is started (its bin, its token).
 */
describe('The agent process', () => {
  const fixture = agentProcessFixture();
  const { computerWithAgent, say, untilIdle, folders } = fixture;

  const systemOf = (request: Json): string => (request.messages as Json[])[0].content as string;

  it("sends the model the settings' instructions and the workspace's AGENTS.md, read again at every turn, subagents included", async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (systemOf(request).startsWith('You are a subagent')) return completion({ content: 'Found nothing.' });
      if (last.role === 'user' && last.content === 'Delegate.')
        return completion({ tool_calls: [call('t1', 'Task', { description: 'look', prompt: 'Look around.' })] });
      return completion({ content: 'Done.' });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, home, output, owner } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      mkdirSync(workspace, { recursive: true });
      writeFileSync(join(workspace, 'AGENTS.md'), '# Conventions\nUse tabs, never spaces.\n');
      writeFileSync(join(home, 'hooks.json'), JSON.stringify({ instructions: 'Answer in French.' }));
      const sessionId = await say(computerId, 'Delegate.');
      await untilIdle(sessionId, output);
      expect(model.requests).toHaveLength(3);
      for (const request of model.requests) {
        const system = systemOf(request);
        expect(system).toContain('Use tabs, never spaces.');
        expect(system).toContain('Answer in French.');
        expect(system.indexOf('Answer in French.')).toBeLessThan(system.indexOf('Use tabs, never spaces.'));
      }
      expect(systemOf(model.requests[1])).toMatch(/^You are a subagent/);

      // Edited between turns: the next turn reads the new text, without a restart.
      writeFileSync(join(workspace, 'AGENTS.md'), 'Use spaces after all.\n');
      await fixture.t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Again.' }).expect(200);
      await untilIdle(sessionId, output);
      const system = systemOf(model.requests[model.requests.length - 1]);
      expect(system).toContain('Use spaces after all.');
      expect(system).not.toContain('Use tabs');
    } finally {
      await model.stop();
    }
  });

  it("gives the model the AGENTS.md of a folder its tools reach, with the tool's result, once a turn", async () => {
    const model = new ScriptedModel((request) => {
      const messages = request.messages as Json[];
      if (messages.at(-1)!.role === 'user') {
        return completion({ tool_calls: [call('r1', 'Read', { file_path: 'src/api/handler.ts' }), call('r2', 'LS', { path: 'src/api' })] });
      }
      return completion({ content: 'Done.' });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      mkdirSync(join(workspace, 'src', 'api'), { recursive: true });
      writeFileSync(join(workspace, 'src', 'api', 'handler.ts'), 'export const handler = 1;\n');
      writeFileSync(join(workspace, 'src', 'AGENTS.md'), 'Source: no default exports.\n');
      writeFileSync(join(workspace, 'src', 'api', 'AGENTS.md'), 'API: validate every body.\n');
      const sessionId = await say(computerId, 'Look at the handler.');
      await untilIdle(sessionId, output);
      const results = (model.requests[1].messages as Json[]).filter((m) => m.role === 'tool').map((m) => String(m.content));
      expect(results[0]).toMatch(
        /export const handler = 1;[\s\S]*<nested_instructions path="src\/AGENTS.md">\nSource: no default exports.\n<\/nested_instructions>\n<nested_instructions path="src\/api\/AGENTS.md">\nAPI: validate every body.\n/,
      );
      // The second tool reached the same folders: nothing more of them.
      expect(results[1]).not.toContain('nested_instructions');
    } finally {
      await model.stop();
    }
  });

  describe('agent-platform-agent', () => {
    const bin = (args: string[], env: Record<string, string> = {}) =>
      spawnSync(process.execPath, [join(ROOT, 'bin/agent-platform-agent.js'), ...args], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), ...env },
        timeout: 30_000,
      });

    it('--help says how to run it, with the token from the environment or a file', () => {
      const { status, stdout } = bin(['--help']);
      expect(status).toBe(0);
      expect(stdout).toMatch(/^Usage: agent-platform-agent --url <base_url> \[--token-file <path>\]/);
      expect(stdout).toContain('AGENT_TOKEN_FILE');
      expect(stdout).not.toMatch(/--token </);
    });

    it('refuses a token on the command line (every user sees it in ps), with or without its value: exit 64', () => {
      for (const args of [['--token', 'cpt_secret'], ['--token=cpt_secret'], ['--token']]) {
        const { status, stderr } = bin(['--url', 'http://127.0.0.1:9', ...args]);
        expect([status, stderr]).toEqual([64, expect.stringMatching(/--token is not accepted.*AGENT_TOKEN.*--token-file/s)]);
      }
    });

    it('refuses an empty or missing token file, and asks for a token when there is none: exit 64', () => {
      const dir = mkdtempSync(join(tmpdir(), 'ap-token-'));
      folders.push(dir);
      writeFileSync(join(dir, 'empty'), ' \n', { mode: 0o600 });
      const empty = bin(['--url', 'http://127.0.0.1:9', '--token-file', join(dir, 'empty')]);
      expect([empty.status, empty.stderr]).toEqual([64, expect.stringContaining('is empty')]);
      const missing = bin(['--url', 'http://127.0.0.1:9'], { AGENT_TOKEN_FILE: join(dir, 'missing') });
      expect([missing.status, missing.stderr]).toEqual([64, expect.stringContaining('cannot be read')]);
      const none = bin(['--url', 'http://127.0.0.1:9']);
      expect([none.status, none.stderr]).toEqual([64, expect.stringContaining('The agent token (AGENT_TOKEN, --token-file or AGENT_TOKEN_FILE) is required')]);
    });

    it('refuses a model API it does not speak (AGENT_MODEL_PROVIDER), rather than calling the model with the wrong one: exit 64', () => {
      const { status, stderr } = bin(['--url', 'http://127.0.0.1:9'], { AGENT_TOKEN: 'cpt_x', AGENT_MODEL_PROVIDER: 'openai-responses' });
      expect([status, stderr]).toEqual([
        64,
        expect.stringContaining('AGENT_MODEL_PROVIDER must be generic-chat-completion-api (the default) or anthropic, not "openai-responses"'),
      ]);
    });

    it('works with the token in a file (the fixture starts every agent so): it connects and takes work', async () => {
      const { computerId, output, owner } = await computerWithAgent({});
      const sessionId = await say(computerId, 'Hello');
      await untilIdle(sessionId, output);
      const computer = await fixture.t.http().get(`/api/v0/computers/${computerId}`).set(owner.auth).expect(200);
      expect(computer.body.status).toBe('active');
    });
  });
});

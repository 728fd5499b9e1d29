import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_HOOK_TIMEOUT_SECONDS, HookRun, PROJECT_DIR_VARIABLE, runHooks, selectCommands } from './hook-runner';
import { HookCommand, HookEntry, HookEvent, HooksConfig } from './hooks-config';
import { gone, running } from '../../../test/utils/process-state';

let workspace: string;
const hook = (command: string, timeout?: number): HookCommand => (timeout === undefined ? { type: 'command', command } : { type: 'command', command, timeout });
const entry = (commands: (string | HookCommand)[], matcher?: string): HookEntry => ({
  ...(matcher === undefined ? {} : { matcher }),
  hooks: commands.map((c) => (typeof c === 'string' ? hook(c) : c)),
});
/** Runs the commands as one entry of the event. */
const run = (commands: (string | HookCommand)[], fields: { event?: HookEvent; input?: Record<string, unknown>; toolName?: string } = {}) => {
  const event = fields.event ?? 'Stop';
  return runHooks({ [event]: [entry(commands)] }, event, fields.input ?? {}, { workspace, toolName: fields.toolName }) as Promise<HookRun>;
};
const read = (name: string) => readFileSync(join(workspace, name), 'utf8');

beforeEach(() => {
  workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agent-hooks-')));
});
afterEach(() => rmSync(workspace, { recursive: true, force: true }));

describe('selectCommands', () => {
  it('is nothing when the event has no entries or none matches', () => {
    expect(selectCommands({}, 'Stop')).toEqual({ commands: [], matchers: [] });
    expect(selectCommands({ Stop: [] }, 'Stop')).toEqual({ commands: [], matchers: [] });
    expect(selectCommands({ Stop: [entry(['a'])] }, 'SessionEnd')).toEqual({ commands: [], matchers: [] });
    expect(selectCommands({ PreToolUse: [entry(['a'], 'Edit')] }, 'PreToolUse', 'MultiEdit')).toEqual({ commands: [], matchers: [] });
    expect(selectCommands({ PreToolUse: [entry(['a'], 'Edit')] }, 'PostToolUse', 'Edit')).toEqual({ commands: [], matchers: [] });
  });

  it('takes the commands of the matching entries, in order, identical commands once (the first timeout wins)', () => {
    const config: HooksConfig = {
      PreToolUse: [
        entry([hook('lint', 5), 'format'], 'Edit|Create'),
        entry(['never'], 'Bash'),
        entry(['audit', hook('lint', 30)]),
        entry([hook('format', 1), 'notify'], '*'),
      ],
    };
    expect(selectCommands(config, 'PreToolUse', 'Edit')).toEqual({
      commands: [hook('lint', 5), hook('format'), hook('audit'), hook('notify')],
      matchers: ['Edit|Create', '*'],
    });
    expect(selectCommands(config, 'PreToolUse', 'Bash')).toEqual({
      commands: [hook('never'), hook('audit'), hook('lint', 30), hook('format', 1), hook('notify')],
      matchers: ['Bash', '*'],
    });
  });

  it('treats commands that differ only in spacing as different commands', () => {
    expect(selectCommands({ Stop: [entry(['echo hi', 'echo  hi', 'echo hi'])] }, 'Stop').commands).toEqual([hook('echo hi'), hook('echo  hi')]);
  });

  it('collects the matchers without duplicates or empty ones', () => {
    const config: HooksConfig = {
      PostToolUse: [entry(['a'], 'Edit'), entry(['b'], ''), entry(['c']), entry(['d'], 'Edit'), entry(['e'], '.*Patch'), entry(['f'], '*')],
    };
    expect(selectCommands(config, 'PostToolUse', 'Edit')).toEqual({ commands: ['a', 'b', 'c', 'd', 'f'].map((c) => hook(c)), matchers: ['Edit', '*'] });
    expect(selectCommands(config, 'PostToolUse', 'ApplyPatch').matchers).toEqual(['.*Patch', '*']);
  });

  it('takes every entry of the other events, whatever its matcher', () => {
    const config: HooksConfig = { Notification: [entry(['a'], 'Edit'), entry(['b'])] };
    expect(selectCommands(config, 'Notification').commands).toEqual([hook('a'), hook('b')]);
    expect(selectCommands(config, 'Notification', 'Bash').commands).toEqual([hook('a'), hook('b')]);
  });
});

describe('runHooks', () => {
  it('is null when no hook matches', async () => {
    expect(await runHooks({}, 'Stop', {}, { workspace })).toBeNull();
    expect(await runHooks({ Stop: [entry(['touch ran'])] }, 'SessionStart', {}, { workspace })).toBeNull();
    expect(await runHooks({ PreToolUse: [entry(['touch ran'], 'Edit')] }, 'PreToolUse', {}, { workspace, toolName: 'MultiEdit' })).toBeNull();
    expect(() => read('ran')).toThrow(/ENOENT/);
  });

  it('gives the command the event and the input as JSON on its standard input', async () => {
    const input = { session_id: 's-1', tool_name: 'Edit', tool_input: { path: 'a.ts', text: 'é "quoted"\nline' } };
    const result = await runHooks({ PreToolUse: [entry(['cat > input.json'], 'Edit')] }, 'PreToolUse', input, { workspace, toolName: 'Edit' });
    expect(result).toMatchObject({ event: 'PreToolUse', matchers: ['Edit'], blocked: false, blockReason: '' });
    expect(JSON.parse(read('input.json'))).toEqual({ hook_event_name: 'PreToolUse', ...input });
    expect(Object.keys(JSON.parse(read('input.json')))[0]).toBe('hook_event_name');

    await run(['cat > stop.json'], { event: 'Stop' });
    expect(read('stop.json')).toBe('{"hook_event_name":"Stop"}');
  });

  it('runs the command in the workspace, with the workspace path in AGENT_PROJECT_DIR', async () => {
    expect(PROJECT_DIR_VARIABLE).toBe('AGENT_PROJECT_DIR');
    const { results } = await run(['pwd', 'printf %s "$AGENT_PROJECT_DIR"']);
    expect(results.map((r) => r.stdout)).toEqual([`${workspace}\n`, workspace]);
  });

  it('does not hand the command the agent configuration (AGENT_*), but the rest of the environment', async () => {
    process.env.AGENT_TOKEN = 'sk-secret';
    process.env.HOOKS_TEST_VISIBLE = 'visible';
    try {
      const { results } = await run(['env']);
      expect(results[0].stdout).not.toMatch(/sk-secret|AGENT_TOKEN/);
      expect(results[0].stdout.split('\n').filter((line) => line.startsWith('AGENT_'))).toEqual([`AGENT_PROJECT_DIR=${workspace}`]);
      expect(results[0].stdout).toMatch(/^HOOKS_TEST_VISIBLE=visible$/m);
    } finally {
      delete process.env.AGENT_TOKEN;
      delete process.env.HOOKS_TEST_VISIBLE;
    }
  });

  it('ends when the shell exits, even if a background process holds its output, and kills what it left behind', async () => {
    const started = Date.now();
    const run1 = await run([{ type: 'command', command: 'sleep 30 & echo $! > bg.pid; echo done', timeout: 10 }]);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(run1.results[0]).toMatchObject({ exitCode: 0, stdout: 'done\n', timedOut: false });
    const pid = Number(read('bg.pid'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(running(pid)).toBe(false);
  });

  it('keeps multi-byte characters whole across reads', async () => {
    const result = await run([String.raw`printf '\342\202'; sleep 0.2; printf '\254'`]);
    expect(result.results[0].stdout).toBe('€');
  });

  it('never lets the input replace the event name', async () => {
    await run(['cat > fake.json'], { event: 'Stop', input: { hook_event_name: 'Fake', x: 1 } });
    expect(JSON.parse(read('fake.json'))).toEqual({ hook_event_name: 'Stop', x: 1 });
  });

  it('records the exit code, output and errors of each command, in the order of the commands', async () => {
    const commands = ['echo ok; echo note >&2', 'echo failed >&2; exit 1', 'exit 3', 'no-such-command-xyz'];
    const result = await run(commands);
    expect(result.results).toEqual([
      { command: hook(commands[0]), exitCode: 0, stdout: 'ok\n', stderr: 'note\n', timedOut: false },
      { command: hook(commands[1]), exitCode: 1, stdout: '', stderr: 'failed\n', timedOut: false },
      { command: hook(commands[2]), exitCode: 3, stdout: '', stderr: '', timedOut: false },
      { command: hook(commands[3]), exitCode: 127, stdout: '', stderr: expect.stringContaining('no-such-command-xyz') as string, timedOut: false },
    ]);
    expect(result.blocked).toBe(false);
    expect(result.blockReason).toBe('');
  });

  it('is blocked when a command exits with status 2, with its stderr (trimmed) as the reason', async () => {
    const result = await run(['echo fine', 'echo "  Edits to .env are not allowed  " >&2; echo out; exit 2']);
    expect(result.blocked).toBe(true);
    expect(result.blockReason).toBe('Edits to .env are not allowed');
    expect(result.results.map((r) => r.exitCode)).toEqual([0, 2]);
    expect(result.results[1].stdout).toBe('out\n');
  });

  it('names the command in the reason when a blocking command says nothing on stderr', async () => {
    expect((await run(['exit 2'])).blockReason).toBe('exit 2 exited with status 2');
    expect((await run(['echo "   " >&2; echo why; exit 2'])).blockReason).toBe('echo "   " >&2; echo why; exit 2 exited with status 2');
  });

  it('joins the reasons of several blocking commands, in the order of the commands', async () => {
    const result = await run(['echo first >&2; exit 2', 'exit 0', 'exit 2', 'sleep 0.2; echo third >&2; exit 2']);
    expect(result.blocked).toBe(true);
    expect(result.blockReason).toBe('first\nexit 2 exited with status 2\nthird');
  });

  it('runs the commands in parallel', async () => {
    const started = Date.now();
    const result = await run(['sleep 1; echo a', 'sleep 1; echo b', 'sleep 1; echo c']);
    const elapsed = Date.now() - started;
    expect(result.results.map((r) => r.stdout)).toEqual(['a\n', 'b\n', 'c\n']);
    expect(elapsed).toBeGreaterThanOrEqual(950);
    expect(elapsed).toBeLessThan(2500);
  });

  it('runs each command once, even when several entries name it', async () => {
    const config: HooksConfig = { PostToolUse: [entry(['echo x >> ran.log'], 'Edit'), entry(['echo x >> ran.log'], '.*'), entry(['echo x >> ran.log'])] };
    const result = await runHooks(config, 'PostToolUse', {}, { workspace, toolName: 'Edit' });
    expect(result!.results).toHaveLength(1);
    expect(result!.matchers).toEqual(['Edit', '.*']);
    expect(read('ran.log')).toBe('x\n');
  });

  it('waits 60 s by default', () => {
    expect(DEFAULT_HOOK_TIMEOUT_SECONDS).toBe(60);
  });

  it('kills the whole process group at the timeout', async () => {
    const started = Date.now();
    const result = await run([hook('echo started; sleep 30 & echo $! > bg.pid; sleep 30', 0.5), 'echo other']);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(2000);
    expect(result.results[0]).toEqual({
      command: hook('echo started; sleep 30 & echo $! > bg.pid; sleep 30', 0.5),
      exitCode: -1,
      stdout: 'started\n',
      stderr: '\n[killed after 0.5 s]',
      timedOut: true,
    });
    expect(result.results[1]).toMatchObject({ exitCode: 0, stdout: 'other\n', timedOut: false });
    expect(result.blocked).toBe(false);
    expect(await gone(Number(read('bg.pid')))).toBe(true);
  });

  it('keeps what the command wrote to stderr before the timeout', async () => {
    const result = await run([hook('echo working >&2; sleep 30', 0.3)]);
    expect(result.results[0]).toMatchObject({ exitCode: -1, timedOut: true, stderr: 'working\n\n[killed after 0.3 s]' });
  });

  it('says which signal killed a command', async () => {
    const result = await run(['kill -TERM $$']);
    expect(result.results[0]).toMatchObject({ exitCode: -1, stderr: '\n[killed by SIGTERM]', timedOut: false });
  });

  it('does not fail a command that does not read its input', async () => {
    const big = 'x'.repeat(1_000_000);
    const result = await run(['exit 0', 'echo done', 'true'], { input: { big } });
    expect(result.results.map((r) => [r.exitCode, r.stdout, r.stderr])).toEqual([
      [0, '', ''],
      [0, 'done\n', ''],
      [0, '', ''],
    ]);
  });

  it('reads a large input whole', async () => {
    const big = 'é'.repeat(300_000);
    await run(['cat > input.json'], { input: { big } });
    expect(JSON.parse(read('input.json'))).toEqual({ hook_event_name: 'Stop', big });
  });

  it('keeps at most 10,000 characters of stdout and of stderr', async () => {
    const result = await run(["head -c 50000 /dev/zero | tr '\\0' a; head -c 30000 /dev/zero | tr '\\0' b >&2; exit 2"]);
    expect(result.results[0].stdout).toBe('a'.repeat(10_000));
    expect(result.results[0].stderr).toBe('b'.repeat(10_000));
    expect(result.blockReason).toBe('b'.repeat(10_000));
  });

  it('does not throw when the command cannot be started', async () => {
    const result = await run(['echo \0 nul']);
    expect(result.results[0]).toEqual({
      command: hook('echo \0 nul'),
      exitCode: -1,
      stdout: '',
      stderr: expect.stringMatching(/^could not start in /) as string,
      timedOut: false,
    });
    expect(result.blocked).toBe(false);
  });

  it('does not throw when the workspace is gone', async () => {
    rmSync(workspace, { recursive: true });
    const result = await run(['echo hi']);
    expect(result.results[0]).toMatchObject({ exitCode: -1, stdout: '', stderr: expect.stringMatching(/^could not start in /) as string, timedOut: false });
  });

  it('records when the run started and ended', async () => {
    const before = Date.now();
    const result = await run(['sleep 0.2']);
    const after = Date.now();
    expect(result.startedAt).toBeGreaterThanOrEqual(before);
    expect(result.startedAt).toBeLessThanOrEqual(result.endedAt);
    expect(result.endedAt - result.startedAt).toBeGreaterThanOrEqual(150);
    expect(result.endedAt).toBeLessThanOrEqual(after);
  });
});

import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXECUTE_MAX_OUTPUT_CHARACTERS, executeTool } from './execute';
import { CommandPolicy, ToolContext } from './tool';
import { gone } from '../../../test/utils/process-state';

let root: string;
let workspace: string;
const context = (fields: { policy?: Partial<CommandPolicy>; signal?: AbortSignal } = {}): ToolContext => ({
  workspace,
  policy: { commandAllowlist: [], commandDenylist: [], commandBlocklist: [], ...fields.policy },
  signal: fields.signal ?? new AbortController().signal,
});
const execute = (command: string, fields: { timeout?: number; policy?: Partial<CommandPolicy>; signal?: AbortSignal } = {}) =>
  executeTool.run(fields.timeout === undefined ? { command } : { command, timeout: fields.timeout }, context(fields));

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'agent-tools-')));
  workspace = join(root, 'ws');
  mkdirSync(workspace);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('Execute', () => {
  it('runs the command in the workspace and returns its output and exit code', async () => {
    expect(await execute('echo hello')).toEqual({ content: 'hello\n[exit code 0]', isError: false });
    expect(await execute('pwd')).toEqual({ content: `${workspace}\n[exit code 0]`, isError: false });
    expect(await execute('true')).toEqual({ content: '(no output)\n[exit code 0]', isError: false });
    expect(await execute('printf "no line end"')).toEqual({ content: 'no line end\n[exit code 0]', isError: false });
  });

  it('combines stdout and stderr in the order they came', async () => {
    expect(await execute('echo out; sleep 0.1; echo err >&2; sleep 0.1; echo out2')).toEqual({ content: 'out\nerr\nout2\n[exit code 0]', isError: false });
  });

  it('passes stdout and stderr on as they come, before the command ends', async () => {
    const pieces: string[] = [];
    const marker = join(root, 'go');
    // The command waits for a file the test writes once it has seen the first line: that line came while it ran.
    const running = executeTool.run(
      { command: `echo first; echo warn >&2; while [ ! -e ${marker} ]; do sleep 0.02; done; echo second` },
      { ...context(), onOutput: (text) => pieces.push(text) },
    );
    const seen = () => pieces.join('');
    while (!(seen().includes('first\n') && seen().includes('warn\n'))) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(seen()).not.toContain('second');
    writeFileSync(marker, '');
    const result = await running;
    expect(result).toEqual({ content: expect.stringMatching(/second\n\[exit code 0\]$/), isError: false });
    // The same output, in the same order, as the result's.
    expect(`${seen()}[exit code 0]`).toBe(result.content);
  });

  it('is an error when the exit code is not 0, or the shell is killed by a signal', async () => {
    expect(await execute('echo failing >&2; exit 3')).toEqual({ content: 'failing\n[exit code 3]', isError: true });
    expect(await execute('ls does-not-exist')).toMatchObject({ content: expect.stringMatching(/does-not-exist.*\n\[exit code [12]\]$/s), isError: true });
    expect(await execute('kill -TERM $$')).toEqual({ content: '(no output)\n[killed by signal SIGTERM]', isError: true });
  });

  it('runs without the agent configuration (AGENT_*) in its environment, and without pagers', async () => {
    process.env.AGENT_TEST_SECRET = 'sk-secret';
    process.env.TOOLS_TEST_VISIBLE = 'visible';
    try {
      const { content } = await execute('env');
      expect(content).not.toMatch(/AGENT_|sk-secret/);
      expect(content).toMatch(/^TOOLS_TEST_VISIBLE=visible$/m);
      expect(content).toMatch(/^PAGER=cat$/m);
      expect(content).toMatch(/^GIT_PAGER=cat$/m);
    } finally {
      delete process.env.AGENT_TEST_SECRET;
      delete process.env.TOOLS_TEST_VISIBLE;
    }
  });

  it('gives the command no input', async () => {
    expect(await execute('cat; read line; echo "read: $?"')).toEqual({ content: 'read: 1\n[exit code 0]', isError: false });
  });

  it('kills the whole process group at the timeout', async () => {
    const started = Date.now();
    const result = await execute('echo started; sleep 30 & echo $! > bg.pid; sleep 30', { timeout: 1 });
    const elapsed = Date.now() - started;
    expect(result).toEqual({ content: 'started\n[killed after 1 s]', isError: true });
    expect(elapsed).toBeGreaterThanOrEqual(950);
    expect(elapsed).toBeLessThan(2500);
    expect(await gone(Number(readFileSync(join(workspace, 'bg.pid'), 'utf8')))).toBe(true);
  });

  it('takes fractional timeouts and caps them at 600 s', async () => {
    expect(await execute('sleep 5', { timeout: 0.3 })).toEqual({ content: '(no output)\n[killed after 0.3 s]', isError: true });
    expect(await execute('echo fine', { timeout: 100_000 })).toEqual({ content: 'fine\n[exit code 0]', isError: false });
  });

  it('kills what the command left running in the background when it ends', async () => {
    const started = Date.now();
    const result = await execute('sleep 30 & echo $! > bg.pid; echo done');
    expect(result).toEqual({ content: 'done\n[exit code 0]', isError: false });
    expect(Date.now() - started).toBeLessThan(2500);
    expect(await gone(Number(readFileSync(join(workspace, 'bg.pid'), 'utf8')))).toBe(true);
  });

  it('stops waiting for the output of a process that left the group, 1 s after the shell ended', async () => {
    const started = Date.now();
    const result = await execute('setsid sleep 30 & echo $! > escaped.pid; sleep 0.3; echo done');
    const pid = Number(readFileSync(join(workspace, 'escaped.pid'), 'utf8'));
    try {
      expect(result).toEqual({ content: 'done\n[exit code 0]', isError: false });
      expect(Date.now() - started).toBeGreaterThanOrEqual(1200);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      process.kill(pid, 'SIGKILL');
    }
  });

  it('keeps the end of a long output and says it was cut', async () => {
    const result = await execute("head -c 100000 /dev/zero | tr '\\0' a; echo; echo END");
    expect(result.isError).toBe(false);
    const lines = result.content.split('\n');
    expect(lines[0]).toBe(`[output truncated: only its last ${EXECUTE_MAX_OUTPUT_CHARACTERS} characters are shown]`);
    expect(lines.slice(1)).toEqual(['a'.repeat(EXECUTE_MAX_OUTPUT_CHARACTERS - 5), 'END', '[exit code 0]']);
  });

  it('keeps multi-byte characters whole across chunks', async () => {
    const result = await execute("i=0; while [ $i -lt 5000 ]; do printf 'é€'; i=$((i+1)); done");
    expect(result.content).toBe(`${'é€'.repeat(5000)}\n[exit code 0]`);
  });

  it('kills the process group when the call is aborted', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 300);
    const result = await execute('sleep 30 & echo $! > bg.pid; sleep 30', { signal: controller.signal });
    expect(result).toEqual({ content: '(no output)\n[killed: the call was aborted]', isError: true });
    expect(Date.now() - started).toBeLessThan(2500);
    expect(await gone(Number(readFileSync(join(workspace, 'bg.pid'), 'utf8')))).toBe(true);
  });

  it('does not start when the call is aborted already', async () => {
    const controller = new AbortController();
    controller.abort();
    expect(await execute('touch ran', { signal: controller.signal })).toEqual({ content: 'The command was not run: the call was aborted', isError: true });
    expect(existsSync(join(workspace, 'ran'))).toBe(false);
  });

  it('refuses, without running anything, a command the policy refuses', async () => {
    expect(await execute('touch ran && rm -rf x', { policy: { commandDenylist: ['rm -rf'] } })).toEqual({
      content: `Refused by the organization's commandDenylist: "rm -rf"`,
      isError: true,
    });
    expect(await execute('touch ran; sudo ls', { policy: { commandBlocklist: ['sudo'] } })).toEqual({
      content: `Refused by the organization's commandBlocklist: "sudo"`,
      isError: true,
    });
    expect(await execute('touch ran | curl x', { policy: { commandAllowlist: ['touch'] } })).toEqual({
      content: `Refused by the organization's commandAllowlist: "curl x" is not on the allowlist`,
      isError: true,
    });
    expect(existsSync(join(workspace, 'ran'))).toBe(false);
    expect(await execute('touch ran && ls', { policy: { commandAllowlist: ['touch', 'ls'] } })).toEqual({ content: 'ran\n[exit code 0]', isError: false });
  });

  it('refuses, without running anything, what the parsed command line shows: pipelines, redirections, unparseable lines', async () => {
    expect(await execute('echo touch ran | sh', { policy: { commandDenylist: ['echo * | sh'] } })).toEqual({
      content: `Refused by the organization's commandDenylist: "echo * | sh"`,
      isError: true,
    });
    expect(await execute('echo x > ran', { policy: { commandAllowlist: ['echo'] } })).toEqual({
      content: `Refused by the organization's commandAllowlist: "echo x > ran" writes to a file (> ran), and no pattern on the allowlist includes that redirection`,
      isError: true,
    });
    expect(await execute("touch ran; echo 'unclosed", { policy: { commandDenylist: ['rm'] } })).toEqual({
      content: `Refused by the organization's commandDenylist: the command could not be parsed as /bin/sh reads it (1:17: reached EOF without closing quote '), so it cannot be checked`,
      isError: true,
    });
    expect(existsSync(join(workspace, 'ran'))).toBe(false);
    expect(await execute('echo x > ran && echo done', { policy: { commandAllowlist: ['echo * > ran', 'echo done'] } })).toEqual({
      content: 'done\n[exit code 0]',
      isError: false,
    });
  });

  it('refuses an empty command and a missing workspace', async () => {
    expect(await execute('   ')).toEqual({ content: 'Argument "command" must not be empty', isError: true });
    rmSync(workspace, { recursive: true });
    expect(await execute('echo hi')).toEqual({ content: expect.stringMatching(/^The workspace .* is not available/), isError: true });
  });
});

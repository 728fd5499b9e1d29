import { readFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { runInProcessGroup } from '../process-group';
import { AllowedIps, hostsNamedIn } from '../sandbox/network-policy';
import { Sandbox, SandboxRefusal } from '../sandbox/sandbox';
import { checkCommand } from './command-policy';
import { defineTool, optionalNumber, requiredString, ToolError } from './common';
import { ToolContext, ToolResult } from './tool';
import { gitEnvironment } from './git-hooks';
import { workspaceRoot } from './workspace';

export const EXECUTE_DEFAULT_TIMEOUT_SECONDS = 120;
export const EXECUTE_MAX_TIMEOUT_SECONDS = 600;
export const EXECUTE_MAX_OUTPUT_CHARACTERS = 30_000;

/** Where sandboxed commands get their settings and their temporary folder (one per agent process). */
const sandbox = new Sandbox({ nested: process.env.AGENT_NESTED_SANDBOX === '1' });

export const executeTool = defineTool({
  name: 'Execute',
  description: [
    'Runs a shell command (`/bin/sh -c`) in the workspace root and returns its combined stdout and stderr, then `[exit code N]`.',
    `It runs without a terminal and without input (stdin is empty): use non-interactive flags. It is killed after timeout seconds (default ${EXECUTE_DEFAULT_TIMEOUT_SECONDS}, at most ${EXECUTE_MAX_TIMEOUT_SECONDS}),`,
    `and so are the processes it leaves behind when it ends. Only the last ${EXECUTE_MAX_OUTPUT_CHARACTERS} characters of output are returned.`,
    "Commands are checked against the organization's command and network policies first; a refused command does not run.",
    'When the organization requires a sandbox, the command runs in one: it may write only in the workspace and $TMPDIR, and reach only the network the organization allows.',
    'When the organization limits the addresses agents connect to, the command reaches the network only through a proxy (HTTP_PROXY/ALL_PROXY) that keeps to them.',
    'Prefer Read, LS, Glob and Grep to read and search files, and Edit, Create and ApplyPatch to change them.',
  ].join(' '),
  parameters: {
    type: 'object',
    properties: {
      command: { type: 'string', description: 'The command line, run by /bin/sh in the workspace root.' },
      timeout: {
        type: 'number',
        exclusiveMinimum: 0,
        maximum: EXECUTE_MAX_TIMEOUT_SECONDS,
        description: `Seconds before the command is killed. Defaults to ${EXECUTE_DEFAULT_TIMEOUT_SECONDS}.`,
      },
    },
    required: ['command'],
    additionalProperties: false,
  },
  async run(input, context) {
    const command = requiredString(input, 'command');
    if (command.trim() === '') throw new ToolError('Argument "command" must not be empty');
    const timeout = Math.min(optionalNumber(input, 'timeout', { exclusiveMin: 0 }) ?? EXECUTE_DEFAULT_TIMEOUT_SECONDS, EXECUTE_MAX_TIMEOUT_SECONDS);
    const refusal = checkCommand(command, context.policy);
    if (refusal !== null) throw new ToolError(`Refused by the organization's ${refusal}`);
    const allowedIps = AllowedIps.of(context.policy);
    if (allowedIps) {
      for (const host of hostsNamedIn(command)) {
        const why = await allowedIps.refusalFor(host);
        if (why) throw new ToolError(`Refused by the organization's ${why}; nothing ran.`);
      }
    }
    if (context.signal.aborted) throw new ToolError('The command was not run: the call was aborted');
    const cwd = await workspaceRoot(context);
    const settings = context.policy.sandbox;
    const { includeCoAuthoredByAgent, enableAgentShield } = context.policy;
    const gitEnv =
      includeCoAuthoredByAgent === undefined && enableAgentShield === undefined
        ? {}
        : gitEnvironment(commandEnvironment(), { includeCoAuthoredByAgent: includeCoAuthoredByAgent ?? false, enableAgentShield: enableAgentShield ?? false });
    let confined;
    try {
      confined = await sandbox.confine(command, { sandbox: settings, networkPolicy: context.policy.networkPolicy }, cwd, await worktreeGitDir(cwd));
    } catch (error) {
      if (error instanceof SandboxRefusal) throw new ToolError(error.message);
      throw error;
    }
    if (!confined) return runProcess('/bin/sh', ['-c', command], cwd, gitEnv, timeout, context);
    try {
      return await runProcess(confined.file, confined.args, cwd, { ...gitEnv, ...confined.env }, timeout, context);
    } finally {
      await confined.cleanup();
    }
  },
});

/**
 * When the workspace is a git worktree (a session's, under runInWorktree), the repository's own git folder, where
 * git writes the worktree's commits and refs: writable in the sandbox as the workspace is. Otherwise none.
 */
async function worktreeGitDir(workspace: string): Promise<string[]> {
  const marker = await readFile(join(workspace, '.git'), 'utf8').catch(() => null);
  const gitdir = marker === null ? null : /^gitdir: (.+)$/m.exec(marker)?.[1]?.trim();
  // <repository>/.git/worktrees/<name>: the repository's .git is two folders up.
  return gitdir && basename(dirname(gitdir)) === 'worktrees' ? [resolve(workspace, gitdir, '..', '..')] : [];
}

/**
 * The environment commands run with: the agent's own, without its configuration (`AGENT_*`: the platform
 * token and the model API key must not reach what the model runs), with pagers and git prompts turned off.
 */
export function commandEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('AGENT_')) env[name] = value;
  return { ...env, PAGER: 'cat', GIT_PAGER: 'cat', GIT_TERMINAL_PROMPT: '0' };
}

/** The output, keeping its end: the last `max` characters of all that was appended. */
class OutputTail {
  private text = '';
  private dropped = false;
  constructor(private readonly max: number) {}

  append(chunk: string): void {
    this.text += chunk;
    if (this.text.length > 2 * this.max) {
      this.text = this.text.slice(-this.max);
      this.dropped = true;
    }
  }

  toString(): string {
    const truncated = this.dropped || this.text.length > this.max;
    const text = this.text.length > this.max ? this.text.slice(-this.max) : this.text;
    if (text === '') return '(no output)';
    const body = text.endsWith('\n') ? text.slice(0, -1) : text;
    return truncated ? `[output truncated: only its last ${this.max} characters are shown]\n${body}` : body;
  }
}

/** Runs the command (the shell, or the sandbox around it) and reports its output and how it ended. */
async function runProcess(
  file: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  timeoutSeconds: number,
  { signal, onOutput }: Pick<ToolContext, 'signal' | 'onOutput'>,
): Promise<ToolResult> {
  const output = new OutputTail(EXECUTE_MAX_OUTPUT_CHARACTERS);
  const append = (text: string) => {
    output.append(text);
    onOutput?.(text);
  };
  const ended = await runInProcessGroup({
    file,
    args,
    cwd,
    env: { ...commandEnvironment(), ...env },
    timeoutMs: timeoutSeconds * 1000,
    signal,
    onStdout: append,
    onStderr: append,
  });
  if (ended.startError) return { content: `Could not run the command: ${ended.startError.message}`, isError: true };
  let status: string;
  if (ended.ending === 'timeout') status = `[killed after ${timeoutSeconds} s]`;
  else if (ended.ending === 'aborted') status = '[killed: the call was aborted]';
  else if (ended.exitCode !== null) status = `[exit code ${ended.exitCode}]`;
  else status = `[killed by signal ${ended.exitSignal ?? 'unknown'}]`;
  return { content: `${output.toString()}\n${status}`, isError: ended.ending !== null || ended.exitCode !== 0 };
}

import { spawn } from 'node:child_process';
import { commandEnvironment } from '../tools/execute';
import { HookCommand, HookEntry, HookEvent, HooksConfig, matches } from './hooks-config';

/** Seconds a hook command may run when its entry sets no timeout. */
export const DEFAULT_HOOK_TIMEOUT_SECONDS = 60;
/** The environment variable that hands hook commands the workspace path. */
export const PROJECT_DIR_VARIABLE = 'AGENT_PROJECT_DIR';
/** Characters of stdout and of stderr kept per command. */
const MAX_OUTPUT = 10_000;

export interface HookResult {
  command: HookCommand;
  /** -1 when it could not start, timed out or was killed. */
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** One run of an event's matching hooks: the commands run in parallel, each once. */
export interface HookRun {
  event: HookEvent;
  /** The matchers of the entries that matched (tool events). */
  matchers: string[];
  results: HookResult[];
  startedAt: number;
  endedAt: number;
  /** Exit status 2 from any command: a deliberate block; `stderr` says why. */
  blocked: boolean;
  blockReason: string;
}

/** The commands of the entries that match, identical commands once. */
export function selectCommands(config: HooksConfig, event: HookEvent, toolName?: string): { commands: HookCommand[]; matchers: string[] } {
  const entries: HookEntry[] = (config[event] ?? []).filter((entry) => matches(entry, event, toolName));
  const seen = new Set<string>();
  const commands: HookCommand[] = [];
  for (const entry of entries) {
    for (const hook of entry.hooks) {
      if (seen.has(hook.command)) continue;
      seen.add(hook.command);
      commands.push(hook);
    }
  }
  const matchers = [...new Set(entries.map((entry) => entry.matcher).filter((m): m is string => m !== undefined && m !== ''))];
  return { commands, matchers };
}

/**
 * Runs an event's matching hooks in parallel, each with the input as JSON on its standard input, in
 * the workspace, with the workspace path in AGENT_PROJECT_DIR. A hook that fails, times out (killed
 * with its process group) or cannot start never throws; exit status 2 marks the run as blocked.
 * Null when no hook matches.
 */
export async function runHooks(
  config: HooksConfig,
  event: HookEvent,
  input: Record<string, unknown>,
  options: { workspace: string; toolName?: string },
): Promise<HookRun | null> {
  const { commands, matchers } = selectCommands(config, event, options.toolName);
  if (commands.length === 0) return null;
  const startedAt = Date.now();
  // The event's name first, and never one the input tries to set.
  const rest = Object.fromEntries(Object.entries(input).filter(([key]) => key !== 'hook_event_name'));
  const stdin = JSON.stringify({ hook_event_name: event, ...rest });
  const results = await Promise.all(commands.map((command) => runOne(command, stdin, options.workspace)));
  const blocking = results.filter((r) => r.exitCode === 2);
  return {
    event,
    matchers,
    results,
    startedAt,
    endedAt: Date.now(),
    blocked: blocking.length > 0,
    blockReason: blocking.map((r) => r.stderr.trim() || `${r.command.command} exited with status 2`).join('\n'),
  };
}

/** After the shell exits, how long its output pipes may stay open (a background process holding them) before we stop reading. */
const PIPE_GRACE_MS = 1_000;

function runOne(command: HookCommand, stdin: string, workspace: string): Promise<HookResult> {
  const timeoutSeconds = command.timeout ?? DEFAULT_HOOK_TIMEOUT_SECONDS;
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    const finish = (exitCode: number, note = '') => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      resolve({ command, exitCode, stdout: stdout.slice(0, MAX_OUTPUT), stderr: stderr.slice(0, MAX_OUTPUT - note.length) + note, timedOut });
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn('/bin/sh', ['-c', command.command], {
        cwd: workspace,
        env: { ...commandEnvironment(), [PROJECT_DIR_VARIABLE]: workspace },
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
    } catch (error) {
      return resolve({ command, exitCode: -1, stdout: '', stderr: `could not start in ${workspace}: ${(error as Error).message}`, timedOut: false });
    }
    // The whole process group: what the hook left running in the background goes with it.
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
      finish(-1, `\n[killed after ${timeoutSeconds} s]`);
    }, timeoutSeconds * 1000);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', (error) => finish(-1, `could not start in ${workspace}: ${error.message}`));
    child.on('exit', (code, signal) => {
      killGroup();
      const result = () => finish(code ?? -1, signal ? `\n[killed by ${signal}]` : '');
      child.on('close', result);
      grace = setTimeout(result, PIPE_GRACE_MS);
    });
    // A hook that does not read its input must not fail the write.
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(stdin);
  });
}

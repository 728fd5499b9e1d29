import { runInProcessGroup } from '../process-group';
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

async function runOne(command: HookCommand, stdin: string, workspace: string): Promise<HookResult> {
  const timeoutSeconds = command.timeout ?? DEFAULT_HOOK_TIMEOUT_SECONDS;
  const stdout = new OutputHead(MAX_OUTPUT);
  const stderr = new OutputHead(MAX_OUTPUT);
  const ended = await runInProcessGroup({
    file: '/bin/sh',
    args: ['-c', command.command],
    cwd: workspace,
    env: { ...commandEnvironment(), [PROJECT_DIR_VARIABLE]: workspace },
    stdin,
    timeoutMs: timeoutSeconds * 1000,
    onStdout: (text) => stdout.append(text),
    onStderr: (text) => stderr.append(text),
  });
  const timedOut = ended.ending === 'timeout';
  let note = '';
  if (ended.startError) note = `could not start in ${workspace}: ${ended.startError.message}`;
  else if (timedOut) note = `\n[killed after ${timeoutSeconds} s]`;
  else if (ended.exitSignal) note = `\n[killed by ${ended.exitSignal}]`;
  const exitCode = timedOut || ended.startError ? -1 : (ended.exitCode ?? -1);
  return { command, exitCode, stdout: stdout.text, stderr: stderr.text.slice(0, MAX_OUTPUT - note.length) + note, timedOut };
}

/** The start of an output, at most `max` characters of it kept (a hook printing without end costs no memory). */
class OutputHead {
  text = '';
  constructor(private readonly max: number) {}

  append(chunk: string): void {
    if (this.text.length < this.max) this.text += chunk.slice(0, this.max - this.text.length);
  }
}

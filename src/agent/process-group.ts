import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';

export interface GroupCommand {
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Written to the command's standard input, which is then closed; without it stdin is empty. */
  stdin?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Decoded output as it comes (UTF-8 split across reads is joined first). */
  onStdout(text: string): void;
  onStderr(text: string): void;
}

export interface GroupExit {
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  /** Why the agent ended it, if it did. */
  ending: 'timeout' | 'aborted' | null;
  /** Set when the command could not start at all. */
  startError?: Error;
}

/** After the command exits, how long its output pipes may stay open (a process that left the group holds them) before we stop reading. */
const PIPE_GRACE_MS = 1_000;

/**
 * Runs a command in a process group of its own and resolves when it has ended. At the timeout or on
 * abort the whole group is killed; when the command exits, what it left running in its group is
 * killed too, so nothing it started outlives it. Shared by `Execute` and the hook runner.
 */
export function runInProcessGroup(command: GroupCommand): Promise<GroupExit> {
  return new Promise((resolve) => {
    let ending: GroupExit['ending'] = null;
    let exited = false;
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    let exit: Pick<GroupExit, 'exitCode' | 'exitSignal'> = { exitCode: null, exitSignal: null };
    const finish = (extra: Partial<GroupExit> = {}) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      command.signal?.removeEventListener('abort', onAbort);
      resolve({ ...exit, ending, ...extra });
    };

    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(command.file, command.args, {
        cwd: command.cwd,
        env: command.env,
        detached: true, // its own process group, so that killing -pid reaches every process it starts
        stdio: [command.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      });
    } catch (error) {
      resolve({ exitCode: null, exitSignal: null, ending: null, startError: error as Error });
      return;
    }
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is gone already.
      }
    };
    const stop = (why: 'timeout' | 'aborted') => {
      if (ending === null && !exited) ending = why;
      killGroup();
    };
    const timer = setTimeout(() => stop('timeout'), command.timeoutMs);
    const onAbort = () => stop('aborted');
    if (command.signal?.aborted) onAbort();
    else command.signal?.addEventListener('abort', onAbort, { once: true });

    for (const [stream, sink] of [
      [child.stdout!, command.onStdout],
      [child.stderr!, command.onStderr],
    ] as const) {
      const decoder = new StringDecoder('utf8');
      stream.on('data', (chunk: Buffer) => sink(decoder.write(chunk)));
      stream.on('end', () => sink(decoder.end()));
      stream.on('error', () => undefined);
    }
    if (child.stdin) {
      // A command that does not read its input must not fail the write.
      child.stdin.on('error', () => undefined);
      child.stdin.end(command.stdin);
    }

    child.on('error', (error) => finish({ startError: error }));
    child.on('exit', (exitCode, exitSignal) => {
      exited = true;
      exit = { exitCode, exitSignal };
      killGroup();
      grace = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish();
      }, PIPE_GRACE_MS);
    });
    child.on('close', () => {
      if (exited) finish();
    });
  });
}

import { spawn } from 'node:child_process';

/** Output kept per command: the end is where the error is. */
const OUTPUT_LIMIT = 64 * 1024;

export interface CommandResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** stdout and stderr interleaved, the last 64 KiB. */
  output: string;
  durationMs: number;
}

/**
 * Runs a command in its own process group, in exactly the environment given, and collects its output. Aborting the signal kills the
 * whole group (an install's child processes too). A command that isn't installed rejects with
 * ENOENT.
 */
export function runCommand(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string>; signal: AbortSignal; onSpawn?: (pid: number) => Promise<void> },
): Promise<CommandResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    if (options.signal.aborted) return reject(options.signal.reason as Error);
    const child = spawn(command, args, {
      cwd: options.cwd,
      // The whole environment: nothing of the server's own is inherited.
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    if (child.pid !== undefined && options.onSpawn) {
      options.onSpawn(child.pid).catch(() => undefined);
    }
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.length > OUTPUT_LIMIT * 2) output = output.slice(-OUTPUT_LIMIT);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const kill = () => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    };
    options.signal.addEventListener('abort', kill, { once: true });
    child.once('error', (error) => {
      options.signal.removeEventListener('abort', kill);
      reject(error);
    });
    child.once('close', (exitCode, signal) => {
      options.signal.removeEventListener('abort', kill);
      if (options.signal.aborted) return reject(options.signal.reason as Error);
      resolve({ exitCode, signal, output: output.slice(-OUTPUT_LIMIT), durationMs: Date.now() - started });
    });
  });
}

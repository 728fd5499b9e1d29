import { ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
/**
 * V8 compiles PGlite's WebAssembly twice, quickly and then optimised in the background; a test's short-lived process
 * pays for the second without living to use it (a CLI command: 2.2 CPU-s, 1.5 with this flag).
 */
export const SHORT_LIVED_NODE = ['--liftoff-only'];

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a built entry point (`dist/...`) as a real process, as an operator would. */
export async function runNode(script: string, args: string[], env: Record<string, string>): Promise<RunResult> {
  const child = spawn(process.execPath, [...SHORT_LIVED_NODE, join(ROOT, script), ...args], { cwd: ROOT, env: cleanEnv(env) });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Starts `dist/main.js` as a real process and waits until it listens: on `env.PORT` when given (a restart on the same
 * address), else on a free port.
 */
export async function startServer(args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<ServerProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = spawn(process.execPath, [...SHORT_LIVED_NODE, join(ROOT, 'dist/main.js'), ...args], {
    cwd: ROOT,
    env: cleanEnv({ ...env, PORT: String(port), HOST: '127.0.0.1' }),
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + timeoutMs;
  while (!/listening on/.test(output)) {
    if (child.exitCode !== null) throw new Error(`The server exited with ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`The server did not start in ${timeoutMs} ms:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    stop: async () => {
      // Already gone (a signal leaves exitCode null and sets signalCode): its exit event has passed.
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const [code] = (await once(child, 'exit')) as [number | null];
      return code;
    },
  };
}

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  /** Its exit code, once it exits of itself. */
  exited(): Promise<number | null>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL: no leave, the worker's session stays as it was. */
  killHard(): Promise<void>;
}

/**
 * Starts `dist/worker/main.js` (`agent-platform worker`) against `url` as a real process and waits until it says it is
 * registered. The token comes as an operator gives it: in `env` (WORKER_TOKEN_FILE or WORKER_TOKEN), never in `args`.
 */
export async function startWorker(url: string, env: Record<string, string>, args: string[] = [], timeoutMs = 60_000): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [...SHORT_LIVED_NODE, join(ROOT, 'dist/worker/main.js'), '--url', url, ...args], { cwd: ROOT, env: cleanEnv(env) });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null]>;
  const deadline = Date.now() + timeoutMs;
  while (!/registered as /.test(output)) {
    if (child.exitCode !== null) throw new Error(`The worker exited with ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`The worker did not register in ${timeoutMs} ms:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child,
    output: () => output,
    exited: async () => (await exited)[0],
    stop: async () => {
      if (!gone()) child.kill('SIGTERM');
      return (await exited)[0];
    },
    killHard: async () => {
      if (!gone()) child.kill('SIGKILL');
      await exited;
    },
  };
}

function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const key of ['DATABASE_URL', 'TEST_DATABASE_URL', 'NODE_OPTIONS', 'DATA_DIR', 'PORT', 'HOST']) delete base[key];
  // No local agents unless a test asks for them: they would take work tests expect to stay pending.
  return { ...base, LOG_LEVEL: 'info', LOCAL_AGENTS: 'off', SHUTDOWN_DRAIN_MS: '0', ...env };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * A fresh server's first organization and owner, made as its operator makes them: with the setup token it printed at
 * start (POST /api/v0/setup). Resolves to the owner's API key.
 */
export async function setUpFirstOwner(server: ServerProcess, slug = 'acme'): Promise<string> {
  const setupToken = /setup token (setup_[A-Za-z0-9_-]+)/.exec(server.output())?.[1];
  if (!setupToken) throw new Error(`The server printed no setup token:\n${server.output()}`);
  const res = await fetch(`${server.url}/api/v0/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ setupToken, organization: { slug, name: slug.toUpperCase() }, owner: { email: `owner@${slug}.example`, name: 'Owner' } }),
  });
  if (res.status !== 201) throw new Error(`POST /api/v0/setup answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { apiKey: { key: string } }).apiKey.key;
}

/** For a test of real processes (servers, CLI runs, a new embedded database each): minutes on a loaded CI machine, not the default one. */
export const PROCESSES_TIMEOUT_MS = 240_000;

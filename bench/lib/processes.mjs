// Child processes of the bench: the servers under test.
import { execFileSync, spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import process from 'node:process';
import { clearTimeout, setTimeout } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';

// For the servers' CPU time, which /proc counts in clock ticks.
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU time (user and system) a process has used so far, in ms, or null where /proc is not there. Per request, it
 * is what the server spends on each whatever else runs on the machine: req/s is not (it shares the cores).
 */
export function cpuMillis(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `node <script>` on a free port and waits until `healthPath` answers 200.
 * Its output goes to `logFile`, whose end is shown if it fails to start.
 */
export async function startNodeServer({ name, script, env, logFile, healthPath, timeoutMs = 60_000 }) {
  const port = await freePort();
  const out = openSync(logFile, 'w');
  // BENCH_NODE_ARGS: options for the servers' node, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to find where time goes.
  const nodeArgs = process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ').filter(Boolean) : [];
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', out, out],
  });
  let exited = null;
  child.on('exit', (code, signal) => (exited = { code, signal }));
  const server = {
    name,
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    async stop() {
      if (exited) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited) break;
    const status = await globalThis.fetch(server.url + healthPath).then(
      async (response) => (await response.arrayBuffer(), response.status),
      () => 0,
    );
    if (status === 200) return server;
    await sleep(200);
  }
  await server.stop();
  const reason = exited ? `exited (${exited.code ?? exited.signal})` : `did not answer 200 on ${healthPath} within ${timeoutMs} ms`;
  throw new Error(`${name} ${reason}; end of ${logFile}:\n${readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n')}`);
}

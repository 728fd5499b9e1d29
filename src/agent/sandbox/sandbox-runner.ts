/**
 * Runs one command in the sandbox runtime (`@anthropic-ai/sandbox-runtime`), as the runtime's own command
 * line does, plus the one thing that cannot: a network open to every name but only inside
 * `networkPolicy.allowedIps`. The runtime asks this program about each destination its allow list does not
 * name; an address answers by the list, a name by where it resolves, and the runtime checks the addresses
 * it then dials against the list's complement (so a name cannot resolve elsewhere the second time).
 *
 * Usage: node sandbox-runner.js <settings.json> <command>. The settings: `{ runtime, openNetworkWithin? }`.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { AllowedIps } from './network-policy';

type Settings = { runtime: unknown; openNetworkWithin?: string[] };

/**
 * The runtime starts its two proxy relays inside the sandbox (ports 3128 and 1080) in the background and runs the
 * command at once, so the command's first connection could find nothing listening (curl's exit 7). Later runtime
 * versions wait themselves but need Node 22. Until then the command waits, up to 2 s, for both to listen: two
 * sockets on those ports in state LISTEN (0A) in the sandbox's own /proc/net, read without connecting to either.
 */
const UNTIL_RELAYS_LISTEN = [
  'for _srt_try in $(seq 200); do',
  '  [ "$(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -cE \':(0C38|0438) [0-9A-F]+:0000 0A \')" -ge 2 ] && break',
  '  sleep 0.01',
  'done',
  'unset _srt_try',
].join('\n');

async function main(settingsFile: string, command: string): Promise<number> {
  const settings = JSON.parse(readFileSync(settingsFile, 'utf8')) as Settings;
  const { SandboxManager, SandboxRuntimeConfigSchema } = await import('@anthropic-ai/sandbox-runtime');
  const parsed = SandboxRuntimeConfigSchema.safeParse(settings.runtime);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
    process.stderr.write(`Refused: the sandbox settings do not hold a valid config (${issues}); nothing ran.\n`);
    return 1;
  }
  const within = settings.openNetworkWithin ? new AllowedIps(settings.openNetworkWithin) : null;
  const ask = within ? async ({ host }: { host: string }) => (await within.refusalFor(host)) === null : undefined;
  await SandboxManager.initialize(parsed.data, ask);
  const child = spawn(await SandboxManager.wrapWithSandbox(`${UNTIL_RELAYS_LISTEN}\n${command}`), { shell: true, stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  return await new Promise<number>((resolve) => {
    child.on('error', (error) => {
      process.stderr.write(`The sandboxed command could not start: ${error.message}\n`);
      resolve(1);
    });
    child.on('exit', (code, signal) => {
      SandboxManager.cleanupAfterCommand();
      resolve(code ?? 128 + (signal ? constants.signals[signal] : 0));
    });
  });
}

const [settingsFile, command] = process.argv.slice(2);
main(settingsFile, command).then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`Refused: the sandbox could not start (${error.message}); nothing ran.\n`);
    process.exit(1);
  },
);

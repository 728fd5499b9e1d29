import { randomUUID } from 'node:crypto';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { AgentPolicy } from '../../contract/agent-channel';
import { AllowedIps } from './network-policy';

/** The organization's `sandbox` settings, as the agent policy gives them. */
export type SandboxSettings = AgentPolicy['sandbox'];

/** What `@anthropic-ai/sandbox-runtime` needs of the system to sandbox a command on Linux, with Debian's package names. */
export const SANDBOX_PROGRAMS = [
  { program: 'bwrap', pkg: 'bubblewrap' },
  { program: 'socat', pkg: 'socat' },
  { program: 'rg', pkg: 'ripgrep' },
] as const;

/** The Debian packages missing from this machine for the sandbox (empty when it can run). */
export function missingSandboxPackages(path = process.env.PATH ?? ''): string[] {
  const dirs = path.split(delimiter).filter(Boolean);
  return SANDBOX_PROGRAMS.filter(
    ({ program }) =>
      !dirs.some((dir) => {
        try {
          accessSync(join(dir, program), constants.X_OK);
          return statSync(join(dir, program)).isFile();
        } catch {
          return false;
        }
      }),
  ).map(({ pkg }) => pkg);
}

export function sandboxUnavailable(missing: string[]): string {
  return (
    'Refused: the organization requires commands to run in a sandbox (sandbox.enabled), and this computer cannot make one: ' +
    `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not installed (Debian: apt-get install ${SANDBOX_PROGRAMS.map((p) => p.pkg).join(' ')}). ` +
    'Nothing ran: the agent never runs a command unsandboxed when a sandbox is required.'
  );
}

/**
 * The configuration of `@anthropic-ai/sandbox-runtime` for one command: the organization's settings, plus
 * what the agent needs to work at all, the workspace and a temporary folder of its own being writable.
 * With a `networkPolicy`, the sandbox's proxies refuse names that resolve outside it, and IP entries of
 * `allowedDomains` outside it are dropped: the narrower of the two wins.
 */
export function runtimeConfig(
  settings: SandboxSettings,
  allowedIps: AllowedIps | null,
  writable: string[],
  options: { nested?: boolean } = {},
): Record<string, unknown> {
  const { filesystem, network } = settings;
  const allowedDomains = allowedIps ? network.allowedDomains.filter((entry) => withinAllowedIps(entry, allowedIps)) : network.allowedDomains;
  return {
    // Inside a computer's sandbox, which has already made the PID namespace, a fresh /proc cannot be mounted: the
    // runtime binds the sandbox's own instead (what it sees is the computer's processes, never the server's).
    ...(options.nested ? { enableWeakerNestedSandbox: true } : {}),
    filesystem: {
      allowWrite: [...writable, ...filesystem.allowWrite],
      denyWrite: filesystem.denyWrite,
      denyRead: filesystem.denyRead,
      allowRead: filesystem.allowRead,
    },
    network: {
      allowedDomains,
      deniedDomains: [],
      // The list is the organization's policy, not a hint: nothing outside it, whoever asks.
      strictAllowlist: true,
      ...(allowedIps ? { deniedResolvedAddresses: allowedIps.complement() } : {}),
      allowUnixSockets: network.allowUnixSockets,
      allowAllUnixSockets: network.allowAllUnixSockets,
      allowLocalBinding: network.allowLocalBinding,
      ...(network.httpProxyPort !== undefined ? { httpProxyPort: network.httpProxyPort } : {}),
      ...(network.socksProxyPort !== undefined ? { socksProxyPort: network.socksProxyPort } : {}),
    },
  };
}

/**
 * Whether an `allowedDomains` entry stays under the network policy. The runtime never re-judges what an
 * address entry names, and lets `localhost` names reach loopback whatever the denied addresses: those
 * are kept only when the policy allows their addresses.
 */
function withinAllowedIps(entry: string, allowedIps: AllowedIps): boolean {
  if (isIpEntry(entry)) return allowedIps.allows(hostOf(entry));
  const name = entry.replace(/:\d+$/, '').toLowerCase();
  if (name === 'localhost' || name.endsWith('.localhost')) return allowedIps.allows('127.0.0.1') && allowedIps.allows('::1');
  return true;
}

/** `[1.2.3.4]:443`, `10.0.0.1`, `::1` ... (the entries naming an address rather than a domain). */
function isIpEntry(entry: string): boolean {
  return /^\[.*\](:\d+)?$/.test(entry) || /^\d{1,3}(\.\d{1,3}){3}(:\d+)?$/.test(entry) || (entry.match(/:/g)?.length ?? 0) > 1;
}

function hostOf(entry: string): string {
  const bracketed = /^\[(.*)\](:\d+)?$/.exec(entry);
  if (bracketed) return bracketed[1];
  return /^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(entry) ? entry.replace(/:\d+$/, '') : entry;
}

/**
 * Runs commands through the sandbox runtime's command line (`srt`), one process per command: the
 * settings go in a file of the agent's own, outside everything the sandbox lets a command write.
 */
export class Sandbox {
  private dirs: { settings: string; temp: string } | null = null;

  /** `nested`: the agent itself runs in a computer's sandbox (the server says so with AGENT_NESTED_SANDBOX=1). */
  constructor(private readonly options: { nested?: boolean } = {}) {}

  /** The program and arguments that run `command` sandboxed, and the environment additions it needs. */
  async wrap(
    command: string,
    settings: SandboxSettings,
    allowedIps: AllowedIps | null,
    workspace: string,
    alsoWritable: string[] = [],
  ): Promise<{ file: string; args: string[]; env: Record<string, string>; cleanup: () => Promise<void> }> {
    const dirs = this.folders();
    const file = join(dirs.settings, `${randomUUID()}.json`);
    await writeFile(file, JSON.stringify(runtimeConfig(settings, allowedIps, [workspace, dirs.temp, ...alsoWritable], this.options)), { mode: 0o600 });
    return {
      file: process.execPath,
      args: [require.resolve('@anthropic-ai/sandbox-runtime/dist/cli.js'), '--settings', file, '-c', command],
      // The runtime sets the command's TMPDIR from CLAUDE_CODE_TMPDIR (else /tmp/claude, which it cannot create).
      env: { TMPDIR: dirs.temp, CLAUDE_CODE_TMPDIR: dirs.temp },
      cleanup: () => rm(file, { force: true }),
    };
  }

  private folders(): { settings: string; temp: string } {
    if (!this.dirs) {
      // Nested, the computer's TMPDIR is deep in its workspace, too long a path for the runtime's unix sockets (108
      // bytes); the computer sandbox's own /tmp is private to it.
      const root = mkdtempSync(join(this.options.nested ? '/tmp' : tmpdir(), 'agent-sandbox-'));
      process.once('exit', () => rmSync(root, { recursive: true, force: true }));
      this.dirs = { settings: join(root, 'settings'), temp: join(root, 'tmp') };
      mkdirSync(this.dirs.settings, { mode: 0o700 });
      mkdirSync(this.dirs.temp, { mode: 0o700 });
    }
    return this.dirs;
  }
}

import { randomUUID } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
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

/** What a confinement the organization requires is for, as a refusal names it. */
export type Confinement = 'sandbox' | 'network';

export function sandboxUnavailable(missing: string[], required: Confinement = 'sandbox'): string {
  const why =
    required === 'sandbox'
      ? 'the organization requires commands to run in a sandbox (sandbox.enabled), and this computer cannot make one'
      : 'the organization limits the addresses agents may connect to (networkPolicy.allowedIps), and this computer cannot enforce that limit on commands';
  return (
    `Refused: ${why}: ` +
    `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not installed (Debian: apt-get install ${SANDBOX_PROGRAMS.map((p) => p.pkg).join(' ')}). ` +
    (required === 'sandbox'
      ? 'Nothing ran: the agent never runs a command unsandboxed when a sandbox is required.'
      : 'Nothing ran: the agent never runs a command outside the network limit the organization sets.')
  );
}

/** A refusal to run anything, because this computer cannot confine it as the organization requires. */
export class SandboxRefusal extends Error {}

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
 * The configuration for a command that only `networkPolicy.allowedIps` confines (the organization does not
 * require the sandbox): it may write wherever its user may and bind local ports, and reach any name or address
 * inside the list through the runtime's proxies (sandbox-runner.ts decides each one), nothing else.
 */
export function networkOnlyConfig(allowedIps: AllowedIps): Record<string, unknown> {
  return {
    filesystem: { allowWrite: ['/'], denyWrite: [], denyRead: [], allowRead: [] },
    network: { allowedDomains: [], deniedDomains: [], strictAllowlist: false, deniedResolvedAddresses: allowedIps.complement(), allowLocalBinding: true },
  };
}

export type ConfinedCommand = { file: string; args: string[]; env: Record<string, string>; cleanup: () => Promise<void> };

/**
 * Confines commands as the organization's policy requires, one runtime process per command (sandbox-runner.ts):
 * in the sandbox under `sandbox.enabled`; under `networkPolicy.allowedIps` alone, in one that confines only the
 * network. The settings go in a file of the agent's own, outside everything the sandbox lets a command write.
 */
export class Sandbox {
  private dirs: { settings: string; temp: string } | null = null;

  /** `nested`: the agent itself runs in a computer's sandbox (the server says so with AGENT_NESTED_SANDBOX=1). */
  constructor(private readonly options: { nested?: boolean } = {}) {}

  /**
   * What the policy requires of a command here: the sandbox, a network confinement, or nothing (null). In a
   * computer's sandbox, the computer's own network already keeps to `networkPolicy.allowedIps`.
   */
  required(policy: { sandbox?: SandboxSettings; networkPolicy?: unknown }): Confinement | null {
    if (policy.sandbox?.enabled) return 'sandbox';
    return AllowedIps.of(policy) && !this.options.nested ? 'network' : null;
  }

  /**
   * The program, arguments and environment additions that run `command` as the policy requires, or null when
   * it runs as is. Throws a SandboxRefusal, having run nothing, when this computer cannot confine it.
   */
  async confine(
    command: string,
    policy: { sandbox?: SandboxSettings; networkPolicy?: unknown },
    workspace: string,
    alsoWritable: string[] = [],
  ): Promise<ConfinedCommand | null> {
    const required = this.required(policy);
    if (required === null) return null;
    const missing = missingSandboxPackages();
    if (missing.length > 0) throw new SandboxRefusal(sandboxUnavailable(missing, required));
    const allowedIps = AllowedIps.of(policy);
    const dirs = this.folders();
    const settings =
      required === 'sandbox'
        ? { runtime: runtimeConfig(policy.sandbox!, allowedIps, [workspace, dirs.temp, ...alsoWritable], this.options) }
        : { runtime: networkOnlyConfig(allowedIps!), openNetworkWithin: allowedIps!.entries };
    const file = join(dirs.settings, `${randomUUID()}.json`);
    await writeFile(file, JSON.stringify(settings), { mode: 0o600 });
    return {
      file: process.execPath,
      args: [sandboxRunner(), file, command],
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

/** The runner as built (dist/agent/sandbox/sandbox-runner.js), also when this module runs from the sources. */
function sandboxRunner(): string {
  const beside = resolve(__dirname, 'sandbox-runner.js');
  return existsSync(beside) ? beside : resolve(__dirname, '..', '..', '..', 'dist', 'agent', 'sandbox', 'sandbox-runner.js');
}

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { chown, lstat, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { AddressPolicy, type OrganizationIps } from '../contract/address-policy';
import { findOnPath } from './computer-environment';
import { EgressApi, openEgress } from './egress';
import type { HostLogger, HostSecurityLog } from './host-log';
import { packageRoot } from './package-root';
import { QuotaWatch, watchWorkspace } from './workspace-quota';

/** What the sandbox needs of the host, with Debian's package names. */
const SANDBOX_PROGRAMS = [
  { program: 'bwrap', pkg: 'bubblewrap' },
  { program: 'socat', pkg: 'socat' },
  { program: 'prlimit', pkg: 'util-linux' },
  { program: 'setpriv', pkg: 'util-linux' },
] as const;

/** The system a sandboxed command sees, read-only: programs and libraries, never a home or the server's data. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** Of `/etc`, what programs need to run, resolve users, speak TLS and find their alternatives; nothing else. */
const ETC_ENTRIES = [
  'alternatives',
  'ca-certificates',
  'ca-certificates.conf',
  'ssl',
  'pki',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'nsswitch.conf',
  'passwd',
  'group',
  'hosts',
  'host.conf',
  'resolv.conf',
  'gai.conf',
  'os-release',
  'debian_version',
  'mime.types',
  'protocols',
  'services',
  'inputrc',
  'terminfo',
  'locale.alias',
  'bash.bashrc',
  'profile',
  'shells',
];

/** Where a run's sockets to the outside appear inside its sandbox. */
export const SANDBOX_RUN_DIR = '/run/agent-platform';
/** Inside the sandbox, the proxy everything but the platform API goes through. */
const PROXY_PORT = 3128;

/**
 * Computers' uids when the server runs as root: one per computer, derived from its id, none of them a user of the
 * host. Two computers share one only by chance (one in two billion for a pair); they would then share their process
 * limit, never their files or processes, which the namespaces keep apart.
 */
const UID_BASE = 1_000_000;
const UID_RANGE = 2_000_000_000;

/** What a host's sandboxes are told by whoever runs them (the server's settings, or a worker's). */
export interface HostSandboxSettings {
  /** Whether computers run sandboxed at all (`LOCAL_SANDBOX`). */
  enabled: boolean;
  /** Per sandboxed process (`LOCAL_SANDBOX_MEMORY_MB`, `LOCAL_SANDBOX_CPU_SECONDS`, `LOCAL_SANDBOX_PROCESSES`). */
  memoryMb: number;
  cpuSeconds: number;
  processes: number;
  /** A workspace's limit, and each file's (`LOCAL_WORKSPACE_MAX_MB`). */
  workspaceMaxMb: number;
  /** Hosts the operator lets sandboxes reach although the address policy would refuse them (`OUTBOUND_ALLOWED_HOSTS`). */
  outboundAllowedHosts: readonly string[];
}

/** How a sandbox's commands reach the platform's API. */
export interface ApiTarget {
  /** What the sandbox's `api.sock` reaches. */
  api: EgressApi;
  /** The loopback port the API answers on inside the sandbox. */
  port: number;
  /** The API's URL for a command that runs unsandboxed. */
  url: string;
}

/** What a host's sandboxes ask of whoever runs them. */
export interface HostSandboxHooks {
  /** Where the platform's API is; null while it cannot be reached (a server not listening yet). */
  apiTarget(): ApiTarget | null;
  /** The organization's `networkPolicy.allowedIps` in force (null: no list). */
  allowedIps(organizationId: string): Promise<OrganizationIps | null>;
  logger: HostLogger;
  securityLog: HostSecurityLog;
}

export interface SandboxIdentity {
  uid: number;
  gid: number;
}

export interface SandboxRun {
  computerId: string;
  organizationId: string;
  /** The computer's workspace: the one folder it may write (with what `writable` adds). */
  workspace: string;
  command: string;
  args: readonly string[];
  cwd: string;
  /** The whole environment of the command (built from an allowlist); the sandbox adds its proxy settings. */
  env: Record<string, string>;
  /** Host paths the command may read besides the system (a local repository to clone). */
  readOnly?: readonly string[];
  /** Host paths it may write besides its workspace (the agent's state). */
  writable?: readonly string[];
  /** The command is the platform's reference agent: its code (dist/) and packages are visible, read-only. */
  agent?: boolean;
}

/** A command ready to spawn: through bwrap, or as it is when the sandbox is off. */
export interface SandboxedCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  /** Inside the sandbox, the platform's URL (`http://127.0.0.1:<its port>`); null when it cannot be reached. */
  apiUrl: string | null;
  /** Ends the run's network and removes its sockets: after the command has ended. */
  close(): Promise<void>;
}

/**
 * A managed `local` computer's sandbox (bubblewrap): its own mount namespace built as an allowlist (the system
 * read-only, its workspace writable, nothing of the server's data, home or code but the agent's own files),
 * its own PID, IPC, UTS and network namespaces, and when the server runs as root a uid of its own with no
 * capability. Its processes are bounded (memory, CPU time, processes, file size) by prlimit.
 */
export class HostSandbox {
  private readonly root = process.getuid?.() === 0;
  private readonly policy: AddressPolicy;
  private workingSince: number | null = null;

  constructor(
    private readonly settings: HostSandboxSettings,
    private readonly hooks: HostSandboxHooks,
  ) {
    this.policy = new AddressPolicy({ allowedHosts: [...settings.outboundAllowedHosts] });
  }

  get enabled(): boolean {
    return this.settings.enabled;
  }

  /** The uid and gid a computer's processes run as: its own when the server is root, else the server's. */
  identityOf(computerId: string): SandboxIdentity {
    if (!this.root) return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    const hash = createHash('sha256').update(computerId).digest().readUInt32BE(0);
    const uid = UID_BASE + (hash % UID_RANGE);
    return { uid, gid: uid };
  }

  /**
   * Why a sandbox cannot start on this host (a sentence), or null when it can: the programs it needs, then a
   * real sandbox started once. A working host is not asked again for a minute.
   */
  async unavailable(computerId: string): Promise<string | null> {
    if (!this.enabled) return null;
    if (this.workingSince !== null && Date.now() - this.workingSince < 60_000) return null;
    const missing = SANDBOX_PROGRAMS.filter(({ program }) => !findOnPath(program));
    if (missing.length > 0) {
      const packages = [...new Set(missing.map((m) => m.pkg))];
      return `${missing.map((m) => m.program).join(', ')} ${missing.length === 1 ? 'is' : 'are'} not installed (Debian: apt-get install ${packages.join(' ')})`;
    }
    const probe = this.wrap({ computerId, organizationId: '', workspace: '/', command: 'true', args: [], cwd: '/', env: { PATH: '/usr/bin:/bin' } }, []);
    const outcome = await new Promise<string | null>((done) => {
      const child = spawn(probe.file, probe.args, { env: probe.env, stdio: ['ignore', 'ignore', 'pipe'], cwd: '/' });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.once('error', (error) => done(error.message));
      child.once('close', (code) => done(code === 0 ? null : stderr.trim().split('\n').pop() || `bwrap exited with ${code}`));
    });
    if (outcome === null) this.workingSince = Date.now();
    return outcome === null ? null : `bubblewrap could not make a sandbox (${outcome}); it needs user namespaces, or the server to run as root`;
  }

  /**
   * Makes the computer's own folders (its workspace, its home, what `writable` names; parents first) and, when the
   * server is root, makes them its identity's the first time (root made them). A link or file the computer left in
   * the place of one is removed, never followed: the server writes there as root.
   */
  async prepare(computerId: string, folders: readonly string[]): Promise<void> {
    const { uid, gid } = this.identityOf(computerId);
    for (const folder of folders) {
      const found = await lstat(folder).catch(() => null);
      if (found && !found.isDirectory()) await rm(folder, { force: true });
      if (!found?.isDirectory()) await mkdir(folder, { recursive: true, mode: 0o700 });
      if (!this.enabled || !this.root || (await lstat(folder)).uid === uid) continue;
      await chownTree(folder, uid, gid);
    }
  }

  /**
   * The command that runs `run` in the computer's sandbox. Its network: the platform's server at `apiUrl`, and
   * every other host through the sandbox's proxy (`HTTP(S)_PROXY`), which lets through only what the address
   * policy and the organization's `networkPolicy` allow; both over unix sockets served here for as long as the
   * run lasts. Nothing else of the host's network exists inside, its loopback services included.
   */
  async enter(run: SandboxRun): Promise<SandboxedCommand> {
    if (!this.enabled)
      return { file: run.command, args: [...run.args], env: run.env, apiUrl: this.hooks.apiTarget()?.url ?? null, close: async () => undefined };
    const target = this.hooks.apiTarget();
    if (!target) return this.wrap(run, [run.workspace]);
    const { uid, gid } = this.identityOf(run.computerId);
    const runDir = await mkdtemp(join(tmpdir(), 'ap-run-'));
    try {
      if (this.root) await chown(runDir, uid, gid);
      const allowedIps = await this.hooks.allowedIps(run.organizationId);
      const egress = await openEgress({
        dir: runDir,
        api: target.api,
        policy: this.policy.forOrganization(allowedIps),
        owner: this.root ? { uid, gid } : undefined,
        onRefusal: (host, reason) =>
          this.hooks.securityLog('sandbox.egress_refused', { organizationId: run.organizationId }, { computerId: run.computerId, host, reason }),
      });
      const command = this.wrap(run, [run.workspace], { dir: runDir, apiPort: target.port });
      return {
        ...command,
        close: async () => {
          await egress.close().catch((error: Error) => this.hooks.logger.warn(`Closing the network of a run of computer ${run.computerId}: ${error.message}`));
          await rm(runDir, { recursive: true, force: true });
        },
      };
    } catch (error) {
      await rm(runDir, { recursive: true, force: true });
      throw error;
    }
  }

  private wrap(run: SandboxRun, writable: readonly string[], network: { dir: string; apiPort: number } | null = null): SandboxedCommand {
    const runDir = network?.dir ?? null;
    const { uid, gid } = this.identityOf(run.computerId);
    const args: string[] = [
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-net',
      '--unshare-cgroup-try',
      // The host's name, which a computer's agent reports as its hostname.
      '--hostname',
      hostname(),
      // Without root, user namespaces make the rest possible; as root, the command drops to the computer's uid below.
      ...(this.root ? [] : ['--unshare-user']),
      // The sandbox ends with its command (its PID namespace, and whatever the command left running in it) and with
      // the server: nothing run for a computer outlives what it was run for.
      '--die-with-parent',
    ];
    for (const dir of SYSTEM_DIRS) {
      if (!existsSync(dir)) continue;
      const link = lstatSync(dir).isSymbolicLink();
      args.push(...(link ? ['--symlink', readlinkSync(dir), dir] : ['--ro-bind', dir, dir]));
    }
    args.push('--perms', '0755', '--dir', '/etc');
    for (const entry of ETC_ENTRIES) args.push('--ro-bind-try', `/etc/${entry}`, `/etc/${entry}`);
    args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--size', String(256 * 1024 * 1024), '--tmpfs', '/tmp');

    const readOnly = [...(run.readOnly ?? []), ...this.runtimeDirs(), ...(run.agent ? this.agentDirs() : [])];
    const mounts: Array<[kind: string, source: string, dest: string]> = [
      ...readOnly.filter((path) => existsSync(path)).map((path): [string, string, string] => ['--ro-bind', path, path]),
      ...[...writable, ...(run.writable ?? [])].map((path): [string, string, string] => ['--bind', path, path]),
      ...(runDir ? [['--bind', runDir, SANDBOX_RUN_DIR] as [string, string, string]] : []),
    ];
    // Every folder above a mount is made traversable: bwrap would make it root's, 0700.
    const parents = new Set<string>();
    for (const [, , dest] of mounts) for (let dir = dirname(dest); dir !== '/' && !isSystemPath(dir) && !MOUNTED.has(dir); dir = dirname(dir)) parents.add(dir);
    for (const dir of [...parents].sort((a, b) => a.length - b.length)) args.push('--perms', '0755', '--dir', dir);
    for (const [kind, source, dest] of mounts) args.push(kind, source, dest);
    args.push('--chdir', run.cwd, '--');

    if (this.root) args.push('setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--');
    args.push('prlimit', ...this.limits(), '--');

    const env = { ...run.env };
    let apiUrl: string | null = null;
    if (network) {
      const proxyPort = network.apiPort === PROXY_PORT ? PROXY_PORT + 1 : PROXY_PORT;
      const proxy = `http://127.0.0.1:${proxyPort}`;
      apiUrl = `http://127.0.0.1:${network.apiPort}`;
      Object.assign(env, {
        HTTP_PROXY: proxy,
        HTTPS_PROXY: proxy,
        http_proxy: proxy,
        https_proxy: proxy,
        NO_PROXY: '127.0.0.1,localhost',
        no_proxy: '127.0.0.1,localhost',
      });
      args.push('/bin/sh', '-c', BRIDGE_SCRIPT, 'bridge', String(network.apiPort), String(proxyPort), SANDBOX_RUN_DIR, run.command, ...run.args);
    } else {
      args.push(run.command, ...run.args);
    }
    return { file: 'bwrap', args, env, apiUrl, close: async () => undefined };
  }

  /**
   * Watches the computer's workspace while the command `pid` leads runs: past LOCAL_WORKSPACE_MAX_MB its whole group is
   * killed, and the refusal logged. (Each file is also bounded by RLIMIT_FSIZE at the same size.)
   */
  watchDisk(run: Pick<SandboxRun, 'computerId' | 'organizationId' | 'workspace'>, pid: number): QuotaWatch | null {
    if (!this.enabled) return null;
    const limit = this.settings.workspaceMaxMb * 1024 * 1024;
    return watchWorkspace(run.workspace, limit, pid, (bytes) => {
      this.hooks.logger.warn(
        `Computer ${run.computerId}: its workspace reached ${Math.round(bytes / 1024 / 1024)} MiB, past LOCAL_WORKSPACE_MAX_MB; its command was stopped`,
      );
      this.hooks.securityLog(
        'sandbox.limit_exceeded',
        { organizationId: run.organizationId },
        { computerId: run.computerId, limit: 'LOCAL_WORKSPACE_MAX_MB', bytes },
      );
    });
  }

  private limits(): string[] {
    const mib = 1024 * 1024;
    return [
      `--data=${this.settings.memoryMb * mib}`,
      `--cpu=${this.settings.cpuSeconds}`,
      `--fsize=${this.settings.workspaceMaxMb * mib}`,
      '--core=0',
      // RLIMIT_NPROC counts a uid's processes: a computer's own only when it has a uid of its own.
      ...(this.root ? [`--nproc=${this.settings.processes}`] : []),
    ];
  }

  /** Node and its bundled npm, where they are not under /usr. */
  private runtimeDirs(): string[] {
    const prefix = dirname(dirname(process.execPath));
    return isSystemPath(prefix) ? [] : [prefix];
  }

  /** The platform's built agent and the packages it loads: never the project's other files (its data, its settings). */
  private agentDirs(): string[] {
    const project = packageRoot();
    // Installed as a package (npm install agent-platform), its dependencies sit beside it in the node_modules that holds it.
    const holder = dirname(project);
    return [join(project, 'dist'), join(project, 'node_modules'), ...(basename(holder) === 'node_modules' ? [holder] : [])];
  }
}

/**
 * Run inside the sandbox before the command: socat listens on loopback for the platform API and the proxy and
 * forwards to the run's unix sockets; the command starts once both listen. $1 api port, $2 proxy port, $3 the
 * socket folder, then the command.
 */
const BRIDGE_SCRIPT = [
  'api=$1; proxy=$2; dir=$3; shift 3',
  'socat TCP-LISTEN:$api,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:$dir/api.sock 2>/dev/null &',
  'socat TCP-LISTEN:$proxy,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:$dir/proxy.sock 2>/dev/null &',
  'listening() { grep -qi ":$(printf %04X "$1") 00000000:0000 0A" /proc/net/tcp; }',
  'n=0; until listening $api && listening $proxy; do n=$((n+1)); [ $n -gt 500 ] && { echo "the sandbox network did not start" >&2; exit 125; }; sleep 0.01; done',
  'exec "$@"',
].join('\n');

/** Folders the sandbox mounts itself, above which nothing is made. */
const MOUNTED = new Set(['/tmp', '/etc', '/proc', '/dev']);

function isSystemPath(path: string): boolean {
  return SYSTEM_DIRS.some((dir) => path === dir || path.startsWith(`${dir}/`));
}

/** chown -R without following links (a computer's links point where it likes). */
async function chownTree(path: string, uid: number, gid: number): Promise<void> {
  await new Promise<void>((done, fail) => {
    const child = spawn('chown', ['-R', '--no-dereference', `${uid}:${gid}`, path], { stdio: 'ignore' });
    child.once('error', fail);
    child.once('close', (code) => (code === 0 ? done() : fail(new Error(`chown -R ${path} exited with ${code}`))));
  });
}

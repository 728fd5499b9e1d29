import { Injectable } from '@nestjs/common';
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { accessSync, constants, existsSync, lstatSync, readlinkSync, statSync } from 'node:fs';
import { chown, lstat, mkdir, rm } from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { AppConfig } from '../../../config/app-config';

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
  'alternatives', 'ca-certificates', 'ca-certificates.conf', 'ssl', 'pki', 'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'localtime', 'timezone',
  'nsswitch.conf', 'passwd', 'group', 'hosts', 'host.conf', 'resolv.conf', 'gai.conf', 'os-release', 'debian_version', 'mime.types', 'protocols',
  'services', 'inputrc', 'terminfo', 'locale.alias', 'bash.bashrc', 'profile', 'shells',
];

/** Where a run's sockets to the outside appear inside its sandbox. */
export const SANDBOX_RUN_DIR = '/run/agent-platform';
/** Inside the sandbox, the proxy everything but the platform API goes through. */
const PROXY_PORT = 3128;

/** Computers' uids when the server runs as root: one per computer, none of them a user of the host. */
const UID_BASE = 1_000_000;
const UID_RANGE = 1_000_000;

export interface SandboxIdentity {
  uid: number;
  gid: number;
}

export interface SandboxRun {
  computerId: string;
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
  /** The command is the platform's reference agent: its code (dist/, node_modules/) is visible, read-only. */
  agent?: boolean;
  /** The platform's HTTP server, which the command reaches at `http://127.0.0.1:<port>` inside. */
  api?: { host: string; port: number };
}

/** A command ready to spawn: through bwrap, or as it is when the sandbox is off. */
export interface SandboxedCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  /** The folder of the run's sockets, removed by `close()`. */
  runDir: string | null;
  close(): Promise<void>;
}

/**
 * A managed `local` computer's sandbox (bubblewrap): its own mount namespace built as an allowlist (the system
 * read-only, its workspace writable, nothing of the server's data, home or code but the agent's own files),
 * its own PID, IPC, UTS and network namespaces, and when the server runs as root a uid of its own with no
 * capability. Its processes are bounded (memory, CPU time, processes, file size) by prlimit.
 */
@Injectable()
export class ComputerSandbox {
  private readonly root = process.getuid?.() === 0;
  private workingSince: number | null = null;

  constructor(private readonly config: AppConfig) {}

  get enabled(): boolean {
    return this.config.LOCAL_SANDBOX;
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
    const missing = SANDBOX_PROGRAMS.filter(({ program }) => !onPath(program));
    if (missing.length > 0) {
      const packages = [...new Set(missing.map((m) => m.pkg))];
      return `${missing.map((m) => m.program).join(', ')} ${missing.length === 1 ? 'is' : 'are'} not installed (Debian: apt-get install ${packages.join(' ')})`;
    }
    const probe = this.wrap({ computerId, workspace: '/', command: 'true', args: [], cwd: '/', env: { PATH: '/usr/bin:/bin' } }, []);
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
   * Makes the computer's own folders (its workspace and what `writable` names) its identity's, the first time:
   * when the server is root, they were made by root and the computer's uid could not write them.
   */
  async prepare(computerId: string, folders: readonly string[]): Promise<void> {
    if (!this.enabled || !this.root) return;
    const { uid, gid } = this.identityOf(computerId);
    for (const folder of folders) {
      await mkdir(folder, { recursive: true, mode: 0o700 });
      if ((await lstat(folder)).uid === uid) continue;
      await chownTree(folder, uid, gid);
    }
  }

  /**
   * The command that runs `run` in the computer's sandbox. Network: with `api`, the platform's server is reached at
   * `http://127.0.0.1:<port>` inside, and every other host through the sandbox's proxy (`HTTP(S)_PROXY`), both
   * over unix sockets in `runDir` that the caller serves (see `egress`); nothing else of the host's network exists.
   */
  async enter(run: SandboxRun, runDir: string | null): Promise<SandboxedCommand> {
    if (!this.enabled) return { file: run.command, args: [...run.args], env: run.env, runDir: null, close: async () => undefined };
    return this.wrap(run, [run.workspace], runDir);
  }

  /** Folder for a run's sockets (outside every workspace, readable by the computer's identity only). */
  async makeRunDir(computerId: string): Promise<string> {
    const dir = join(this.config.computersDir, '.runs', `${computerId}-${randomUUID().slice(0, 8)}`);
    await mkdir(dirname(dir), { recursive: true, mode: 0o711 });
    await mkdir(dir, { mode: 0o700 });
    const { uid, gid } = this.identityOf(computerId);
    if (this.root) await chown(dir, uid, gid);
    return dir;
  }

  private wrap(run: SandboxRun, writable: readonly string[], runDir: string | null = null): SandboxedCommand {
    const { uid, gid } = this.identityOf(run.computerId);
    const args: string[] = [
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-net',
      '--unshare-cgroup-try',
      '--hostname',
      'computer',
      // Without root, user namespaces make the rest possible; as root, the command drops to the computer's uid below.
      ...(this.root ? [] : ['--unshare-user']),
      ...(run.agent ? ['--die-with-parent'] : []),
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
    if (runDir && run.api) {
      const proxyPort = run.api.port === PROXY_PORT ? PROXY_PORT + 1 : PROXY_PORT;
      const proxy = `http://127.0.0.1:${proxyPort}`;
      Object.assign(env, { HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' });
      args.push('/bin/sh', '-c', BRIDGE_SCRIPT, 'bridge', String(run.api.port), String(proxyPort), SANDBOX_RUN_DIR, run.command, ...run.args);
    } else {
      args.push(run.command, ...run.args);
    }
    const close = async () => {
      if (runDir) await rm(runDir, { recursive: true, force: true });
    };
    return { file: 'bwrap', args, env, runDir, close };
  }

  private limits(): string[] {
    const mib = 1024 * 1024;
    return [
      `--data=${this.config.LOCAL_SANDBOX_MEMORY_MB * mib}`,
      `--cpu=${this.config.LOCAL_SANDBOX_CPU_SECONDS}`,
      `--fsize=${this.config.LOCAL_WORKSPACE_MAX_MB * mib}`,
      '--core=0',
      // RLIMIT_NPROC counts a uid's processes: a computer's own only when it has a uid of its own.
      ...(this.root ? [`--nproc=${this.config.LOCAL_SANDBOX_PROCESSES}`] : []),
    ];
  }

  /** Node and its bundled npm, where they are not under /usr. */
  private runtimeDirs(): string[] {
    const prefix = dirname(dirname(process.execPath));
    return isSystemPath(prefix) ? [] : [prefix];
  }

  /** The platform's built agent and the packages it loads: never the project's other files (its data, its settings). */
  private agentDirs(): string[] {
    const project = resolve(__dirname, '../../../..');
    return [join(project, 'dist'), join(project, 'node_modules'), join(project, 'package.json')];
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

function onPath(program: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    if (!dir.startsWith('/')) return false;
    try {
      accessSync(join(dir, program), constants.X_OK);
      return statSync(join(dir, program)).isFile();
    } catch {
      return false;
    }
  });
}

/** chown -R without following links (a computer's links point where it likes). */
async function chownTree(path: string, uid: number, gid: number): Promise<void> {
  await new Promise<void>((done, fail) => {
    const child = spawn('chown', ['-R', '--no-dereference', `${uid}:${gid}`, path], { stdio: 'ignore' });
    child.once('error', fail);
    child.once('close', (code) => (code === 0 ? done() : fail(new Error(`chown -R ${path} exited with ${code}`))));
  });
}

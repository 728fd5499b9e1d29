import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The user a server may run as when it is not root (Debian's `nobody`). */
const USER = { uid: 65534, gid: 65534 };
const PROJECT = join(__dirname, '..', '..');
const root = process.getuid?.() === 0;

/**
 * Runs the fixture that plays the server as that user. From root, the checkout may lie where that user cannot go (in
 * a folder of mode 0700, as `mktemp -d` makes and `/root` is): the command then sees it bound onto a folder of its
 * own, in a mount namespace of its own, so nothing on the host changes for it.
 */
function runAsUser(reachable: string, args: (project: string) => string[], env: Record<string, string | undefined>): string {
  const options = { env, encoding: 'utf8' as const, timeout: 60_000 };
  if (!root) return execFileSync(process.execPath, args(PROJECT), options);
  const asUser = `mount --bind "$1" "$2" && shift 2 && exec setpriv --reuid=${USER.uid} --regid=${USER.gid} --clear-groups "$@"`;
  return execFileSync(
    'unshare',
    ['--mount', '--propagation', 'private', '--', 'sh', '-c', asUser, 'sh', PROJECT, reachable, process.execPath, ...args(reachable)],
    options,
  );
}

/**
 * The sandbox when the server runs as an ordinary user: no uid of its own for the computer, so only the sandbox's
 * namespaces (its mounts, its PIDs, its network) keep the computer from what that user may read: its own files, its
 * own processes' environments. Run as that user (from root), or as the user running the tests.
 */
describe('The computer sandbox of a server that is not root', () => {
  let base: string;
  let project: string;

  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), 'ap-user-sandbox-'));
    chmodSync(base, 0o755);
    project = mkdtempSync(join(tmpdir(), 'ap-user-project-'));
    chmodSync(project, 0o755);
  });

  afterAll(() => {
    rmSync(base, { recursive: true, force: true });
    rmSync(project, { recursive: true, force: true });
  });

  it('keeps out the files and processes of the user the server runs as', () => {
    const canary = `canary-${randomUUID()}`;
    const workspace = join(base, 'computers', 'computer');
    const secrets = join(base, 'server-data');
    mkdirSync(workspace, { recursive: true, mode: 0o755 });
    mkdirSync(secrets, { mode: 0o700 });
    // The server's own secret: readable by its user on the host, and by nothing in the sandbox.
    writeFileSync(join(secrets, 'secrets.key'), canary, { mode: 0o600 });
    writeFileSync(join(workspace, 'escape.js'), readFileSync(join(__dirname, '..', 'fixtures', 'escape-attempts.js')));
    const targets = {
      canary,
      // (/proc/1 is the sandbox's own bwrap, whose environment is the computer's: the canary check below covers it.)
      read: [join(secrets, 'secrets.key')],
      list: [secrets, base],
      write: [join(secrets, 'escaped.txt'), join(base, 'escaped.txt')],
      tcp: [],
    };
    writeFileSync(join(workspace, 'targets.json'), JSON.stringify(targets));
    for (const path of [
      base,
      join(base, 'computers'),
      workspace,
      secrets,
      join(secrets, 'secrets.key'),
      join(workspace, 'escape.js'),
      join(workspace, 'targets.json'),
    ]) {
      if (root) chownSync(path, USER.uid, USER.gid);
    }
    chmodSync(join(workspace, 'escape.js'), 0o644);
    chmodSync(join(workspace, 'targets.json'), 0o644);

    const output = runAsUser(project, (at) => [join(at, 'test', 'fixtures', 'sandbox-as-user.js'), join(at, 'dist', 'host', 'host-sandbox.js'), workspace], {
      PATH: process.env.PATH,
      SERVER_SECRET: canary,
    });
    const result = JSON.parse(output.trim().split('\n').pop()!) as { exit?: number; uid?: number; unavailable?: string };
    expect(result).toEqual({ exit: 0, uid: root ? USER.uid : process.getuid!() });

    const report = JSON.parse(readFileSync(join(workspace, 'report.json'), 'utf8')) as {
      reads: Record<string, string>;
      listings: Record<string, unknown>;
      writes: Record<string, string>;
      environs: Record<string, string>;
      canaryInOwnEnvironment: boolean;
    };
    for (const [path, got] of Object.entries(report.reads)) expect({ path, got: got.startsWith('ERR:') ? 'refused' : got }).toEqual({ path, got: 'refused' });
    // The folders above the workspace are the sandbox's own, made for it (writable by this user in its user namespace,
    // gone with it): what counts is that nothing reached the host's.
    expect(report.writes[join(secrets, 'escaped.txt')]).toMatch(/^ERR:/);
    for (const path of targets.write) expect({ path, exists: existsSync(path) }).toEqual({ path, exists: false });
    expect(report.listings[secrets]).toMatch(/^ERR:/);
    expect(report.listings[base]).toEqual(['computers']);
    expect(Object.values(report.environs)).not.toContain('CANARY');
    expect(report.canaryInOwnEnvironment).toBe(false);
    expect(readFileSync(join(secrets, 'secrets.key'), 'utf8')).toBe(canary);
  });
});

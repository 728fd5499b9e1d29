import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A directory to point LOCAL_REPOS_DIR at. */
export function reposRoot(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'ap-repos-'));
}

/**
 * A real git repository with one commit holding `files`. Used as a local clone source, the way an
 * operator's mirror of repositories would be.
 */
export async function createGitRepo(root: string, name: string, files: Record<string, string> = { 'README.md': `# ${name}\n` }): Promise<string> {
  const dir = join(root, name);
  await mkdir(dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=test@example.test', '-c', 'user.name=Test', '-c', 'init.defaultBranch=main', ...args], { cwd: dir, stdio: 'pipe' });
  // Readable by every user whatever the test's umask: a sandboxed clone runs as the computer's own uid.
  git('init', '-q', '--shared=0644');
  git('add', '-A');
  git('commit', '-q', '-m', 'initial');
  await chmod(dir, 0o755);
  return dir;
}

/** An npm project with a lockfile and no dependencies: `npm ci` runs offline; `postinstall` runs `script`. */
export function npmProject(name: string, postinstall?: string): Record<string, string> {
  const pkg = { name, version: '1.0.0', private: true, ...(postinstall ? { scripts: { postinstall } } : {}) };
  const lock = { name, version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name, version: '1.0.0' } } };
  return { 'package.json': JSON.stringify(pkg, null, 2), 'package-lock.json': JSON.stringify(lock, null, 2) };
}

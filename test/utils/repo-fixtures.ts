import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * Git repositories built in temporary folders with the real `git`, for the readiness evaluator.
 * Every folder made here is removed by `removeFixtures()`.
 */
const created: string[] = [];

/** A new empty folder under the system's temporary folder. */
export function tempFolder(prefix = 'ap-readiness-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}

/** Runs git in `dir` with a fixed identity and `main` as the default branch; returns its trimmed output. */
export function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', '-c', 'init.defaultBranch=main', '-c', 'commit.gpgsign=false', ...args], {
    cwd: dir,
    stdio: 'pipe',
    encoding: 'utf8',
  }).trim();
}

/** Writes `files` (relative path → content) under `dir`, creating folders as needed. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
}

/** Commits everything in the work tree. */
export function commitAll(dir: string, message = 'change'): string {
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '--allow-empty', '-m', message);
  return git(dir, 'rev-parse', 'HEAD');
}

/** A repository (`git init -b main`) holding `files`, committed unless `commit` is false. */
export function createRepo(files: Record<string, string> = {}, options: { commit?: boolean; dir?: string } = {}): string {
  const dir = options.dir ?? tempFolder();
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  writeFiles(dir, files);
  if (options.commit !== false) commitAll(dir, 'initial');
  return dir;
}

/** `package.json` text. */
export function packageJson(fields: Record<string, unknown>): string {
  return `${JSON.stringify(fields, null, 2)}\n`;
}

export function removeFixtures(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}

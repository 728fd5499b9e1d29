import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { toRepoUrl } from '../domain/repository-id';

const run = promisify(execFile);

/** Every git call is bounded: a repository cannot hang the evaluator. */
const GIT_TIMEOUT_MS = 60_000;

export class NotARepositoryError extends Error {}

async function git(cwd: string, args: string[], maxBuffer = 16 * 1024 * 1024): Promise<string | null> {
  try {
    const { stdout } = await run('git', args, {
      cwd,
      timeout: GIT_TIMEOUT_MS,
      maxBuffer,
      encoding: 'utf8',
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', LC_ALL: 'C' },
    });
    return stdout;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !(error as { stderr?: string }).stderr) {
      throw new Error('git is not installed (or not on PATH); the evaluator needs it');
    }
    return null;
  }
}

/** The top folder of the git work tree that holds `path`; throws when it is in none. */
export async function workTreeRoot(path: string): Promise<string> {
  const folder = await stat(path).catch(() => null);
  if (!folder?.isDirectory()) throw new NotARepositoryError(`${path} is not a folder (it does not exist, or is a file).`);
  const root = await git(path, ['rev-parse', '--show-toplevel']).catch((error: Error) => {
    if (/not installed/.test(error.message)) throw error;
    return null;
  });
  if (!root?.trim()) throw new NotARepositoryError(`${path} is not inside a git repository (git rev-parse found no work tree).`);
  return root.trim();
}

/**
 * The files of the work tree as git sees them: tracked ones and untracked ones that are not
 * ignored, as relative POSIX paths. Git lists symlinks without following them, so a symlink loop
 * cannot trap the walk, and ignored folders (node_modules, build output) are never read.
 */
export async function listFiles(root: string): Promise<string[]> {
  const out = await git(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--deduplicate'], 512 * 1024 * 1024);
  if (out === null) throw new Error(`git ls-files failed in ${root}`);
  return out.split('\0').filter((path) => path.length > 0);
}

export interface GitFacts {
  repoUrl: string;
  commitHash?: string;
  branch?: string;
  hasLocalChanges: boolean;
  hasNonRemoteCommits: boolean;
}

/** What git says about the state of the work tree, read without the network. */
export async function gitFacts(root: string): Promise<GitFacts> {
  const head = (await git(root, ['rev-parse', '-q', '--verify', 'HEAD^{commit}']))?.trim() || undefined;
  const branch = (await git(root, ['symbolic-ref', '--short', '-q', 'HEAD']))?.trim() || undefined;
  const status = await git(root, ['status', '--porcelain', '--untracked-files=normal']);
  const unpushed = head ? await git(root, ['rev-list', '-n', '1', 'HEAD', '--not', '--remotes']) : '';
  return {
    repoUrl: await remoteUrl(root),
    ...(head ? { commitHash: head } : {}),
    ...(branch ? { branch } : {}),
    hasLocalChanges: (status ?? '').trim().length > 0,
    hasNonRemoteCommits: (unpushed ?? '').trim().length > 0,
  };
}

/**
 * `origin`'s URL (else the first remote's) as a URI without passwords or web credentials (see
 * `toRepoUrl`); a remote that is a local path becomes its `file://` URL; no remote: the work tree's.
 */
async function remoteUrl(root: string): Promise<string> {
  const remotes = ((await git(root, ['remote'])) ?? '').split('\n').filter(Boolean);
  const name = remotes.includes('origin') ? 'origin' : remotes[0];
  const url = name ? (await git(root, ['remote', 'get-url', name]))?.trim() : undefined;
  if (!url) return fileUrl(root);
  return toRepoUrl(url) ?? fileUrl(resolve(root, url));
}

function fileUrl(path: string): string {
  return new URL(`file://${path}`).toString();
}

import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { basename, isAbsolute, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkUrl, URL_HTML_CHARACTERS, URL_UNSAFE_CHARACTERS, UrlRule } from '../contract/urls';

/** How many repos a computer may have, and how long each may be (the create request's schema says the same). */
export const REPO_LIMITS = { maxRepos: 20, maxLength: 2048 } as const;

/** Where a repo string points: a network remote, or a path on this host. */
export type RepoLocation = { kind: 'remote'; url: string } | { kind: 'local'; path: string };

/** `user@host:path`; neither user nor host may start with `-` (it would read as an ssh option). */
const SCP_LIKE = /^[A-Za-z0-9._][A-Za-z0-9._-]*@[A-Za-z0-9][A-Za-z0-9.-]*:[^\s]+$/;
/** Remote URLs: the shared URL rules (src/contract/urls.ts), stored in their normalized form. */
const REMOTE_URL: UrlRule = {
  schemes: ['https:', 'http:', 'ssh:', 'git:'],
  maxLength: REPO_LIMITS.maxLength,
  credentials: 'refuse',
  query: true,
  fragment: false,
};

/**
 * Reads a repo string, or says which rule it breaks. Remote URLs are https, http, ssh or git
 * (normalized: `url` is the form to store), or an scp-style address (`git@host:org/repo.git`, kept
 * as given), without credentials in them (they would be stored and shown back). Local paths and
 * file:// URLs only resolve under `localRoot`, the directory the operator allows; with none, they
 * are refused, so no caller can make the server clone its own files.
 */
export function locateRepo(repo: string, localRoot: string | undefined): RepoLocation | { error: string } {
  if (/\s/.test(repo) || URL_UNSAFE_CHARACTERS.test(repo)) return { error: 'must not contain whitespace, control or invisible characters' };
  if (SCP_LIKE.test(repo)) {
    return URL_HTML_CHARACTERS.test(repo) ? { error: 'must not contain any of < > " \' { } | \\ ^ `' } : { kind: 'remote', url: repo };
  }
  let path: string | undefined;
  if (repo.startsWith('file:')) {
    try {
      path = fileURLToPath(repo);
    } catch {
      return { error: 'is not a valid file:// URL' };
    }
  } else if (isAbsolute(repo)) {
    path = repo;
  } else {
    if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(repo)) {
      return { error: 'must be an https, http, ssh or git URL, an scp-style address (git@host:org/repo.git), or a local path the operator allows' };
    }
    const verdict = checkUrl(repo, REMOTE_URL);
    if (!verdict.ok) return { error: verdict.message };
    return { kind: 'remote', url: verdict.href };
  }
  if (localRoot === undefined) {
    return { error: 'is a local path or file:// URL, and this server allows none (the operator sets LOCAL_REPOS_DIR to allow one directory)' };
  }
  const target = realOrResolved(path);
  const root = realOrResolved(localRoot);
  const inside = relative(root, target);
  if (inside.startsWith('..') || isAbsolute(inside)) {
    return { error: `is outside the one directory this server allows local repositories in (LOCAL_REPOS_DIR)` };
  }
  return { kind: 'local', path: target };
}

/** Symlinks resolved, so a link inside the allowed directory cannot lead out of it. */
function realOrResolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** The longest clone directory name: far below file systems' 255 bytes, and paths stay short. */
export const MAX_CLONE_DIRECTORY_NAME = 64;

/**
 * Directory names for the repos' clones: the repo's name without `.git`, made unique. A longer
 * name keeps its beginning, readable, and ends with a hash of the whole name, so two long names
 * that begin alike stay apart.
 */
export function cloneDirectoryNames(repos: readonly string[]): string[] {
  const used = new Map<string, number>();
  return repos.map((repo) => {
    const last = basename(repo.replace(/[/\\]+$/, '').replace(/^.*:/, '')).replace(/\.git$/, '');
    const safe = last.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[.-]+/, '') || 'repo';
    // Room for the hash and a `-n` that makes it unique.
    const name =
      safe.length <= MAX_CLONE_DIRECTORY_NAME - 4
        ? safe
        : `${safe.slice(0, MAX_CLONE_DIRECTORY_NAME - 4 - 9)}-${createHash('sha256').update(last).digest('hex').slice(0, 8)}`;
    let candidate = name;
    for (let n = 2; used.has(candidate); n++) candidate = `${name}-${n}`;
    used.set(candidate, 1);
    return candidate;
  });
}

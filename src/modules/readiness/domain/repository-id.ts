import { createHash } from 'node:crypto';
import { checkUrl, UrlFormat, UrlRule, UrlVerdict } from '../../../contract/urls';
import { REPORT_LIMITS } from './report';

/**
 * A repository URL as the upload accepts it: https, http, ssh, git or file, with the shared URL
 * rules (src/contract/urls.ts). Credentials are dropped rather than refused: the evaluator
 * reads the remote of a CI checkout, which often carries a token (`https://x-access-token:…@`),
 * and the report only needs to say which repository it was.
 */
const REPOSITORY_URL: UrlRule = {
  schemes: ['https:', 'http:', 'ssh:', 'git:', 'file:'],
  maxLength: REPORT_LIMITS.repoUrl,
  credentials: 'drop',
  query: true,
  fragment: true,
};

/** `user@host:path` (git's scp-like syntax), which is not a URL. */
const SCP_LIKE = /^(?:([^@/\s]+)@)?([^:/\s]+):(?!\/\/)(.+)$/;

const NOT_A_REPOSITORY = 'must be an http(s), ssh, git or file URL, or an scp-like address (git@host:org/repo.git)';

/**
 * A repository's URL as stored and answered, or why it is refused: URLs in their normalized form
 * (WHATWG `href`) without credentials (a token in an https remote is not for every reader of the
 * report), scp-like addresses as the `ssh://` URL they stand for, so every `repoUrl` is a URI.
 */
export function checkRepoUrl(input: string): UrlVerdict {
  let candidate = input;
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(input)) {
    const scp = SCP_LIKE.exec(input);
    // `host:path` is only taken for an address when it names a user or a dotted host name.
    if (scp && (scp[1] || scp[2].includes('.'))) candidate = `ssh://${scp[1] ? `${scp[1]}@` : ''}${scp[2]}/${scp[3].replace(/^\/+/, '')}`;
  }
  const verdict = checkUrl(candidate, REPOSITORY_URL);
  if (!verdict.ok) return candidate === input && !SCHEME.test(input) ? { ok: false, message: NOT_A_REPOSITORY } : verdict;
  return canonical(verdict.href) === undefined ? { ok: false, message: `${NOT_A_REPOSITORY}, with a path to the repository` } : verdict;
}

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/** `checkRepoUrl`'s stored form, or undefined when it refuses the input. */
export function toRepoUrl(input: string): string | undefined {
  const verdict = checkRepoUrl(input);
  return verdict.ok ? verdict.href : undefined;
}

/** The upload body's `repository-url` format. */
export const REPOSITORY_URL_FORMAT: UrlFormat = {
  name: 'a repository URL or an scp-like address (git@host:org/repo.git)',
  problem: (value) => {
    const verdict = checkRepoUrl(value);
    return verdict.ok ? undefined : verdict.message;
  },
};

/**
 * The repository a URL names, whatever the spelling: host in lower case without user, password
 * or port; path without `.git` and trailing slashes. `https://host/a/b.git`, `https://host/a/b`
 * and `git@host:a/b.git` are one repository. The path keeps its case (some hosts are case-sensitive).
 */
export function canonicalRepository(repoUrl: string): string {
  const url = toRepoUrl(repoUrl);
  const form = url === undefined ? undefined : canonical(url);
  if (form === undefined) throw new Error(`Not a repository URL: ${repoUrl}`);
  return form;
}

function canonical(repoUrl: string): string | undefined {
  if (!URL.canParse(repoUrl)) return undefined;
  const url = new URL(repoUrl);
  let path: string;
  try {
    path = decodeURIComponent(url.pathname);
  } catch {
    return undefined;
  }
  path = path
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .replace(/\/+$/, '');
  if (url.protocol === 'file:') return path ? `file://${path}` : undefined;
  return url.hostname && path ? `${url.hostname.toLowerCase()}${path}` : undefined;
}

/** The stable id of a repository: `repo_` and 20 hexadecimal digits of the SHA-256 of its canonical form. */
export function repositoryId(repoUrl: string): string {
  return `repo_${createHash('sha256').update(canonicalRepository(repoUrl)).digest('hex').slice(0, 20)}`;
}

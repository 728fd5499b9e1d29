import { createHash } from 'node:crypto';

const ALLOWED_PROTOCOLS = ['https:', 'http:', 'ssh:', 'git:', 'file:'];

/** `user@host:path` (git's scp-like syntax), which is not a URL. */
const SCP_LIKE = /^(?:([^@/\s]+)@)?([^:/\s]+):(?!\/\/)(.+)$/;

/**
 * A repository's URL as stored and answered: URLs as given but without credentials (a token in an
 * https remote is not for every reader of the report), scp-like addresses as the `ssh://` URL they
 * stand for, so every `repoUrl` is a URI. Undefined for anything else, or anything that does not
 * normalize to a repository.
 */
export function toRepoUrl(input: string): string | undefined {
  let candidate: string | undefined;
  if (URL.canParse(input) && ALLOWED_PROTOCOLS.includes(new URL(input).protocol)) {
    const url = new URL(input);
    const web = url.protocol === 'http:' || url.protocol === 'https:';
    const credentials = (web && url.username !== '') || url.password !== '';
    if (web) url.username = '';
    url.password = '';
    candidate = credentials ? url.toString() : input;
  } else {
    const scp = SCP_LIKE.exec(input);
    // `host:path` is only taken for an address when it names a user or a dotted host name.
    if (scp && (scp[1] || scp[2].includes('.'))) candidate = `ssh://${scp[1] ? `${scp[1]}@` : ''}${scp[2]}/${scp[3].replace(/^\/+/, '')}`;
  }
  return candidate !== undefined && canonical(candidate) !== undefined ? candidate : undefined;
}

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
  path = path.replace(/\/+$/, '').replace(/\.git$/, '').replace(/\/+$/, '');
  if (url.protocol === 'file:') return path ? `file://${path}` : undefined;
  return url.hostname && path ? `${url.hostname.toLowerCase()}${path}` : undefined;
}

/** The stable id of a repository: `repo_` and 20 hexadecimal digits of the SHA-256 of its canonical form. */
export function repositoryId(repoUrl: string): string {
  return `repo_${createHash('sha256').update(canonicalRepository(repoUrl)).digest('hex').slice(0, 20)}`;
}

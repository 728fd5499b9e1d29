import { createHash } from 'node:crypto';

const ALLOWED_PROTOCOLS = ['https:', 'http:', 'ssh:', 'git:', 'file:'];

/** `user@host:path` (git's scp-like syntax), which is not a URL. */
const SCP_LIKE = /^(?:([^@/\s]+)@)?([^:/\s]+):(?!\/\/)(.+)$/;

/**
 * A repository's URL as stored and answered: URLs as given, scp-like addresses as the `ssh://` URL
 * they stand for, so every `repoUrl` is a URI. Undefined for anything else.
 */
export function toRepoUrl(input: string): string | undefined {
  if (URL.canParse(input) && ALLOWED_PROTOCOLS.includes(new URL(input).protocol)) return input;
  const scp = SCP_LIKE.exec(input);
  // `host:path` is only taken for an address when it names a user or a dotted host name.
  return scp && (scp[1] || scp[2].includes('.')) ? `ssh://${scp[1] ? `${scp[1]}@` : ''}${scp[2]}/${scp[3].replace(/^\/+/, '')}` : undefined;
}

/**
 * The repository a URL names, whatever the spelling: host in lower case without user, password
 * or port; path without `.git` and trailing slashes. `https://host/a/b.git`, `https://host/a/b`
 * and `git@host:a/b.git` are one repository. The path keeps its case (some hosts are case-sensitive).
 */
export function canonicalRepository(repoUrl: string): string {
  const url = new URL(toRepoUrl(repoUrl) ?? repoUrl);
  const path = decodeURIComponent(url.pathname).replace(/\/+$/, '').replace(/\.git$/, '').replace(/\/+$/, '');
  return url.protocol === 'file:' ? `file://${path}` : `${url.hostname.toLowerCase()}${path}`;
}

/** The stable id of a repository: `repo_` and 20 hexadecimal digits of the SHA-256 of its canonical form. */
export function repositoryId(repoUrl: string): string {
  return `repo_${createHash('sha256').update(canonicalRepository(repoUrl)).digest('hex').slice(0, 20)}`;
}

export const REPOSITORY_ID_PATTERN = /^repo_[0-9a-f]{20}$/;

import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cloneDirectoryNames, locateRepo } from './repo-location';

describe('locateRepo', () => {
  const root = mkdtempSync(join(tmpdir(), 'repo-location-'));
  const outside = mkdtempSync(join(tmpdir(), 'repo-outside-'));
  mkdirSync(join(root, 'app'));
  symlinkSync(outside, join(root, 'escape'));

  it('accepts remote URLs and scp-style addresses', () => {
    for (const repo of ['https://github.com/acme/app.git', 'http://git.local/app', 'ssh://git@host/app.git', 'git://host/app', 'git@github.com:acme/app.git']) {
      expect(locateRepo(repo, undefined)).toEqual({ kind: 'remote', url: repo });
    }
  });

  it('answers remote URLs in their normalized form, scp-style addresses as given', () => {
    expect(locateRepo('HTTPS://GitHub.com:443/acme/app.git', undefined)).toEqual({ kind: 'remote', url: 'https://github.com/acme/app.git' });
    expect(locateRepo('ssh://git@Host.example:22/app.git', undefined)).toEqual({ kind: 'remote', url: 'ssh://git@host.example:22/app.git' });
    expect(locateRepo('git@github.com:acme/<app>.git', undefined)).toHaveProperty('error');
  });

  it('refuses a password in the URL, other transports, relative paths and option-like strings', () => {
    for (const repo of ['https://user:secret@github.com/acme/app.git', 'https://token@github.com/acme/app.git', 'http:\\\\host/app', 'ext::sh -c touch% /tmp/pwned', 'relative/path', '-oProxyCommand=x', 'ftp://host/app', 'https://', 'a b']) {
      expect(locateRepo(repo, root)).toHaveProperty('error');
    }
  });

  it('refuses every local path when the operator allows no directory', () => {
    expect(locateRepo(join(root, 'app'), undefined)).toMatchObject({ error: expect.stringContaining('LOCAL_REPOS_DIR') });
    expect(locateRepo(pathToFileURL(join(root, 'app')).href, undefined)).toHaveProperty('error');
  });

  it('accepts local paths and file URLs under the allowed directory only, symlinks resolved', () => {
    expect(locateRepo(join(root, 'app'), root)).toMatchObject({ kind: 'local' });
    expect(locateRepo(pathToFileURL(join(root, 'app')).href, root)).toMatchObject({ kind: 'local' });
    expect(locateRepo(join(root, '..', 'etc'), root)).toHaveProperty('error');
    expect(locateRepo('/etc', root)).toHaveProperty('error');
    expect(locateRepo(join(root, 'escape'), root)).toHaveProperty('error');
  });
});

describe('cloneDirectoryNames', () => {
  it('names each clone after its repo, unique within the computer', () => {
    expect(cloneDirectoryNames(['https://h/acme/app.git', 'git@h:other/app.git', '/srv/app-2', 'https://h/x/'])).toEqual(['app', 'app-2', 'app-2-2', 'x']);
  });
});

import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cloneDirectoryNames, locateRepo, MAX_CLONE_DIRECTORY_NAME } from './repo-location';

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
    for (const repo of [
      'https://user:secret@github.com/acme/app.git',
      'https://token@github.com/acme/app.git',
      'http:\\\\host/app',
      'ext::sh -c touch% /tmp/pwned',
      'relative/path',
      '-oProxyCommand=x',
      'ftp://host/app',
      'https://',
      'a b',
    ]) {
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

  it('bounds a long name: its readable beginning and a hash of the whole, unique, and a directory the file system accepts', () => {
    const long = 'a'.repeat(300);
    const repos = [
      `https://h/acme/${long}.git`,
      `https://h/acme/${long}b.git`,
      `https://h/other/${long}.git`,
      `https://h/acme/${'%C3%A9'.repeat(100)}`,
      `https://h/${'x'.repeat(60)}`,
    ];
    const names = cloneDirectoryNames(repos);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) {
      expect(name.length).toBeLessThanOrEqual(MAX_CLONE_DIRECTORY_NAME);
      expect(name).toMatch(/^[A-Za-z0-9][A-Za-z0-9._-]*$/);
    }
    expect(names[0]).toMatch(/^a{40,}-[0-9a-f]{8}$/);
    expect(names[1]).toMatch(/^a{40,}-[0-9a-f]{8}$/);
    expect(names[1]).not.toBe(names[0]);
    expect(names[2]).toBe(`${names[0]}-2`);
    expect(names[4]).toBe('x'.repeat(60));
    // The same repos name the same directories every time (a restart finds its clones).
    expect(cloneDirectoryNames(repos)).toEqual(names);
    const workspace = mkdtempSync(join(tmpdir(), 'clone-names-'));
    for (const name of names) mkdirSync(join(workspace, name));
  });
});

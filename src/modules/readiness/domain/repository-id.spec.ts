import { canonicalRepository, checkRepoUrl, repositoryId, toRepoUrl } from './repository-id';

describe('repository ids', () => {
  it('gives every spelling of one repository the same id', () => {
    const spellings = [
      'https://github.com/acme/api.git',
      'https://github.com/acme/api',
      'https://github.com/acme/api/',
      'https://user:token@GitHub.com:443/acme/api.git',
      'git@github.com:acme/api.git',
      'ssh://git@github.com/acme/api',
      'git://github.com/acme/api.git',
    ];
    expect(new Set(spellings.map(canonicalRepository))).toEqual(new Set(['github.com/acme/api']));
    expect(new Set(spellings.map(repositoryId)).size).toBe(1);
    expect(repositoryId(spellings[0])).toMatch(/^repo_[0-9a-f]{20}$/);
  });

  it('keeps different repositories apart, path case included', () => {
    expect(repositoryId('https://github.com/acme/api')).not.toBe(repositoryId('https://github.com/acme/web'));
    expect(repositoryId('https://github.com/acme/api')).not.toBe(repositoryId('https://gitlab.com/acme/api'));
    expect(repositoryId('https://host/Acme/API')).not.toBe(repositoryId('https://host/acme/api'));
  });

  it('answers URLs as given and scp-like addresses as ssh URLs; refuses anything else', () => {
    expect(toRepoUrl('https://github.com/acme/api.git')).toBe('https://github.com/acme/api.git');
    expect(toRepoUrl('git@github.com:acme/api.git')).toBe('ssh://git@github.com/acme/api.git');
    expect(toRepoUrl('file:///srv/git/api')).toBe('file:///srv/git/api');
    expect(toRepoUrl('github.com:acme/api')).toBe('ssh://github.com/acme/api');
    expect(toRepoUrl('not a url')).toBeUndefined();
    expect(toRepoUrl('javascript:alert(1)')).toBeUndefined();
    expect(toRepoUrl('ftp://host/repo')).toBeUndefined();
    expect(toRepoUrl('https://github.com/acme/%zz')).toBeUndefined();
    expect(toRepoUrl('git@[::1]:acme/repo.git')).toBeUndefined();
  });

  it('stores the normalized form, so every spelling of one URL is stored once', () => {
    expect(toRepoUrl('HTTPS://GitHub.COM:443/acme/api.git')).toBe('https://github.com/acme/api.git');
    expect(toRepoUrl('ssh://git@GitHub.COM/acme/api')).toBe('ssh://git@github.com/acme/api');
    expect(toRepoUrl('https://github.com/acme/ä')).toBe('https://github.com/acme/%C3%A4');
  });

  it('refuses what WHATWG parsing would strip or rewrite', () => {
    for (const bad of [
      ' https://github.com/a/b',
      'https://github.com/a/b\t',
      'https://github.com/a b',
      'http:\\\\github.com/a/b',
      'http:///github.com/a/b',
      'https://github.com/<script>',
      'git@github.com:a/<b>',
      'https://github.com',
      'file:///',
    ]) {
      expect(checkRepoUrl(bad)).toMatchObject({ ok: false });
    }
  });

  it('drops credentials from web URLs and passwords from any', () => {
    expect(toRepoUrl('https://user:token@github.com/acme/api.git')).toBe('https://github.com/acme/api.git');
    expect(toRepoUrl('ssh://git:pw@github.com/acme/api')).toBe('ssh://git@github.com/acme/api');
    expect(toRepoUrl('ssh://git@github.com/acme/api')).toBe('ssh://git@github.com/acme/api');
  });
});

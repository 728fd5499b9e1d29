import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, symlink } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Role } from '../../src/modules/auth';
import { createGitRepo } from '../utils/git-fixtures';
import { createUser, TestUser } from '../utils/factories';
import { expectStatus, expectV0Error, messageFor } from '../utils/v0-errors';
import { startTestApp, TestApp } from '../utils/test-app';
import { byomBody, COMPUTERS, computersInputFixture, expectInvalid, Json, localBody, ROOMY_QUOTAS, UUID } from '../utils/fixtures/computers-input';

/** The v0 computers API's providers (byom, local) and the repositories a computer may clone, with and without LOCAL_REPOS_DIR. */

describe('Computers API (v0): input, roles and limits', () => {
  const fixture = computersInputFixture();
  const { post, create, get, storedRow } = fixture;
  let root: string;
  let owner: TestUser;
  let member: TestUser;
  let member2: TestUser;
  let outsider: TestUser;
  beforeAll(() => ({ root, owner, member, member2, outsider } = fixture));

  // --- byom ------------------------------------------------------------------------------------

  describe('provider byom', () => {
    it('hostId and remoteUser are required: 400 naming each, hostId first', async () => {
      const res = await post(owner, { name: 'laptop', provider: 'byom' });
      expectInvalid(res, 'hostId');
      expect(res.body.metadata.errors.map((e: Json) => e.field)).toEqual(['hostId', 'remoteUser']);
    });

    it('remoteUser alone missing: 400 remoteUser', async () => {
      expectInvalid(await post(owner, { name: 'laptop', provider: 'byom', hostId: randomUUID() }), 'remoteUser');
    });

    it('hostId alone missing: 400 hostId', async () => {
      expectInvalid(await post(owner, { name: 'laptop', provider: 'byom', remoteUser: 'dev' }), 'hostId');
    });

    it.each([
      ['repos', { repos: ['https://example.com/x.git'] }],
      ['autoInstallDeps', { autoInstallDeps: true }],
      ['source', { source: { kind: 'template', templateId: 'blank' } }],
      ['source', { source: { kind: 'computer', computerId: randomUUID() } }],
    ])('%s is for managed computers: 400 naming it', async (field, extra) => {
      expectInvalid(await post(owner, byomBody(extra)), field);
    });

    it('every managed-only field is named at once', async () => {
      const res = await post(
        owner,
        byomBody({ repos: ['https://example.com/x.git'], autoInstallDeps: true, source: { kind: 'template', templateId: 'blank' } }),
      );
      expectInvalid(res, 'repos');
      expect(res.body.metadata.errors.map((e: Json) => e.field)).toEqual(['repos', 'autoInstallDeps', 'source']);
    });

    it('repos: [] and autoInstallDeps: false ask for nothing and are accepted', async () => {
      const computer = await create(owner, byomBody({ repos: [], autoInstallDeps: false }));
      expect(computer).toMatchObject({ providerType: 'byom', status: 'active' });
      expect(computer.provisioningSteps).toBeUndefined();
    });

    it('is active at once, with the hostId given', async () => {
      const body = byomBody();
      const computer = await create(owner, body);
      expect(computer).toMatchObject({ providerType: 'byom', status: 'active', hostId: body.hostId, remoteUser: 'dev' });
      expect(computer.computerSource).toBeUndefined();
    });
  });

  // --- local (managed) -------------------------------------------------------------------------

  describe('provider local', () => {
    it('giving a hostId: 400 hostId', async () => {
      expectInvalid(await post(owner, localBody({ hostId: randomUUID() })), 'hostId');
    });

    it("assigns a hostId and defaults remoteUser to the server's user", async () => {
      const computer = await create(owner, localBody());
      expect(computer.hostId).toMatch(UUID);
      expect(computer.remoteUser).toBe(userInfo().username);
      expect(computer).toMatchObject({ providerType: 'local', status: 'provisioning', clonedRepoDirectories: [] });
      expect(computer.provisioningSteps).toEqual([
        { id: 'create-computer', name: expect.any(String), status: 'pending', installSessionId: expect.any(String) },
      ]);
      const again = await create(owner, localBody());
      expect(again.hostId).not.toBe(computer.hostId);
    });

    it('keeps a remoteUser that is given', async () => {
      expect((await create(owner, localBody({ remoteUser: 'builder' }))).remoteUser).toBe('builder');
    });

    it('source template "blank" is accepted and shown back', async () => {
      const computer = await create(owner, localBody({ source: { kind: 'template', templateId: 'blank' } }));
      expect(computer.computerSource).toEqual({ kind: 'template', templateId: 'blank' });
      expect((await get(owner, computer.id)).computerSource).toEqual({ kind: 'template', templateId: 'blank' });
    });

    it.each([['ubuntu'], ['Blank'], ['blank '], ['../blank']])('source templateId %j: 400 source.templateId', async (templateId) => {
      const res = await post(owner, localBody({ source: { kind: 'template', templateId } }));
      expectInvalid(res, 'source.templateId');
      expect(messageFor(res, 'source.templateId')).toContain('blank');
    });

    it('copying a computer of another organization: 404 computer_not_found naming source.computerId', async () => {
      const theirs = await create(outsider, localBody({ repos: ['https://example.com/secret.git'] }));
      const res = await post(owner, localBody({ source: { kind: 'computer', computerId: theirs.id } }));
      expectV0Error(res, 404, 'computer_not_found');
      expect(res.body.metadata.field).toBe('source.computerId');
      expect(JSON.stringify(res.body)).not.toContain('secret');
    });

    it('copying an unknown computer: 404 computer_not_found naming source.computerId', async () => {
      const res = await post(owner, localBody({ source: { kind: 'computer', computerId: randomUUID() } }));
      expectV0Error(res, 404, 'computer_not_found');
      expect(res.body.metadata.field).toBe('source.computerId');
    });

    it("a member copying another member's computer: 404", async () => {
      const theirs = await create(member2, localBody());
      const res = await post(member, localBody({ source: { kind: 'computer', computerId: theirs.id } }));
      expectV0Error(res, 404, 'computer_not_found');
      expect(res.body.metadata.field).toBe('source.computerId');
    });

    it('copying a visible computer takes its repos and autoInstallDeps when the body gives none', async () => {
      const repos = ['https://example.com/org/one.git', 'git@example.com:org/two.git'];
      const original = await create(member, localBody({ repos, autoInstallDeps: true }));
      const copy = await create(member, localBody({ name: 'copy', source: { kind: 'computer', computerId: original.id } }));
      expect(copy.computerSource).toEqual({ kind: 'computer', computerId: original.id });
      expect(copy.provisioningSteps.map((s: Json) => s.id)).toEqual(['create-computer', 'clone-repos', 'install-dependencies']);
      expect(await storedRow(copy.id)).toEqual({ repos, auto_install_deps: true });
      // An owner may copy a member's computer.
      const ownersCopy = await create(owner, localBody({ source: { kind: 'computer', computerId: original.id } }));
      expect(await storedRow(ownersCopy.id)).toEqual({ repos, auto_install_deps: true });
    });

    it('copying a computer keeps what the body gives', async () => {
      const original = await create(owner, localBody({ repos: ['https://example.com/org/one.git'], autoInstallDeps: true }));
      const noRepos = await create(owner, localBody({ repos: [], source: { kind: 'computer', computerId: original.id } }));
      expect(noRepos.provisioningSteps.map((s: Json) => s.id)).toEqual(['create-computer']);
      expect(await storedRow(noRepos.id)).toEqual({ repos: [], auto_install_deps: true });
      const noInstall = await create(owner, localBody({ autoInstallDeps: false, source: { kind: 'computer', computerId: original.id } }));
      expect(noInstall.provisioningSteps.map((s: Json) => s.id)).toEqual(['create-computer', 'clone-repos']);
      expect(await storedRow(noInstall.id)).toEqual({ repos: ['https://example.com/org/one.git'], auto_install_deps: false });
    });
  });

  // --- repos ---------------------------------------------------------------------------------

  describe('repos', () => {
    it.each([
      ['https://github.com/org/repo.git'],
      ['http://git.example.com/repo'],
      ['ssh://git@example.com/org/repo.git'],
      ['ssh://git@example.com:2222/org/repo.git'],
      ['git://example.com/repo.git'],
      ['git@github.com:org/repo.git'],
      ['deploy.bot@git.example.com:org/repo'],
    ])('%s is accepted', async (repo) => {
      const computer = await create(owner, localBody({ repos: [repo] }));
      expect(computer.provisioningSteps.map((s: Json) => s.id)).toEqual(['create-computer', 'clone-repos']);
      expect((await storedRow(computer.id)).repos).toEqual([repo]);
    });

    it.each([
      ['a URL with a password', 'https://u:p@example.com/x.git', 'password'],
      ['an ssh URL with a password', 'ssh://git:secret@example.com/x.git', 'password'],
      ['a URL with only a password', 'https://:p@example.com/x.git', 'password'],
      ['an https URL with a user (a token, often)', 'https://token-user@example.com/x.git', 'credentials'],
      ['a relative path', './repo', ''],
      ['a bare name', 'repo', ''],
      ['a parent path', '../repo', ''],
      ['a home path', '~/repo', ''],
      ['the ext transport', 'ext::sh -c touch% /tmp/pwned', ''],
      ['the ext transport without spaces', 'ext::ssh', ''],
      ['an option', '-oProxyCommand=touch /tmp/pwned', ''],
      ['an option without spaces', '-oProxyCommand=calc', ''],
      ['--upload-pack', '--upload-pack=touch', ''],
      ['an ftp URL', 'ftp://example.com/x.git', ''],
      ['a URL with a space', 'https://example.com/a b.git', ''],
      ['a URL with a newline', 'https://example.com/a\n.git', ''],
      ['a URL without host', 'git:/x.git', ''],
      ['a URL that is only a scheme', 'https://', ''],
      ['a file URL with a host', 'file://otherhost/srv/x.git', ''],
      ['an scp address without user', 'example.com:org/repo.git', ''],
      ['an scp address whose user is an option', '-oProxyCommand@evil.example:/x', ''],
      ['an ssh URL whose host is an option', 'ssh://-oProxyCommand=touch/x', ''],
      ['an ssh URL whose user is an option', 'ssh://-oProxy@example.com/x', ''],
      ['a git URL whose host starts with a dash', 'git://-host/x', ''],
    ])('%s is 400 naming its index', async (_, repo, mentions) => {
      const res = await post(owner, localBody({ repos: ['https://example.com/a.git', 'git@example.com:b.git', 'https://example.com/c.git', repo] }));
      expectInvalid(res, 'repos[3]');
      expect(res.body.metadata.errors).toHaveLength(1);
      expect(messageFor(res, 'repos[3]')).toContain(mentions);
    });

    it('every bad repo is named', async () => {
      const res = await post(owner, localBody({ repos: ['./a', 'https://example.com/ok.git', 'ext::x', '/etc'] }));
      expectInvalid(res, 'repos[0]');
      expect(res.body.metadata.errors.map((e: Json) => e.field)).toEqual(['repos[0]', 'repos[2]', 'repos[3]']);
    });

    it('local paths and file:// URLs under LOCAL_REPOS_DIR are accepted', async () => {
      const repo = await createGitRepo(root, 'accepted');
      for (const value of [repo, pathToFileURL(repo).href, join(root, 'not-yet-there'), `${root}/sub/../accepted`]) {
        const computer = await create(owner, localBody({ repos: [value] }));
        expect((await storedRow(computer.id)).repos).toEqual([value]);
      }
    });

    it.each([
      ['/etc', () => '/etc'],
      ['/etc/passwd as a file URL', () => 'file:///etc/passwd'],
      ['a path climbing out', () => join(root, '..', 'elsewhere')],
      ['an unnormalized path climbing out', () => `${root}/../elsewhere`],
      ['a sibling sharing its prefix', () => `${root}-evil`],
      ['a file URL climbing out', () => `${pathToFileURL(root).href}/../elsewhere`],
      ['the parent directory', () => join(root, '..')],
    ])('%s, outside LOCAL_REPOS_DIR: 400 mentioning LOCAL_REPOS_DIR', async (_, repo) => {
      const res = await post(owner, localBody({ repos: [repo()] }));
      expectInvalid(res, 'repos[0]');
      expect(messageFor(res, 'repos[0]')).toContain('LOCAL_REPOS_DIR');
    });

    it('a symlink inside LOCAL_REPOS_DIR that points outside: 400', async () => {
      const outside = await mkdtemp(join(tmpdir(), 'ap-outside-'));
      await createGitRepo(outside, 'private');
      await symlink(join(outside, 'private'), join(root, 'escape'));
      for (const value of [join(root, 'escape'), pathToFileURL(join(root, 'escape')).href, join(root, 'escape', '.git')]) {
        const res = await post(owner, localBody({ repos: [value] }));
        expectInvalid(res, 'repos[0]');
        expect(messageFor(res, 'repos[0]')).toContain('LOCAL_REPOS_DIR');
      }
    });

    it('a symlinked directory on the way out: 400', async () => {
      const outside = await mkdtemp(join(tmpdir(), 'ap-outside-'));
      await mkdir(join(outside, 'deep'), { recursive: true });
      await symlink(outside, join(root, 'door'));
      expectInvalid(await post(owner, localBody({ repos: [join(root, 'door', 'deep')] })), 'repos[0]');
    });

    it('a symlink inside LOCAL_REPOS_DIR that stays inside is accepted', async () => {
      const repo = await createGitRepo(root, 'target');
      await symlink(repo, join(root, 'alias'));
      await create(owner, localBody({ repos: [join(root, 'alias')] }));
    });
  });

  // --- an app without LOCAL_REPOS_DIR ------------------------------------------------------------

  describe('with no LOCAL_REPOS_DIR configured', () => {
    let bare: TestApp;
    let admin: TestUser;

    beforeAll(async () => {
      bare = await startTestApp({ ...ROOMY_QUOTAS, PROVISIONING_CONCURRENCY: '0' });
      admin = await createUser(bare, Role.Owner);
    });

    afterAll(() => bare.close());

    it.each([
      ["a path under the first app's LOCAL_REPOS_DIR", () => join(root, 'accepted')],
      ['its file URL', () => pathToFileURL(join(root, 'accepted')).href],
      ['/tmp', () => '/tmp'],
      ['/', () => '/'],
      ['file:///etc/passwd', () => 'file:///etc/passwd'],
      ['file:/etc/passwd', () => 'file:/etc/passwd'],
      ['file://localhost/etc', () => 'file://localhost/etc'],
    ])('%s: 400 mentioning LOCAL_REPOS_DIR', async (_, repo) => {
      const res = await bare
        .http()
        .post(COMPUTERS)
        .set(admin.auth)
        .send(localBody({ repos: [repo()] }));
      expectInvalid(res, 'repos[0]');
      expect(messageFor(res, 'repos[0]')).toContain('LOCAL_REPOS_DIR');
    });

    it('remote repos are still accepted', async () => {
      const res = await bare
        .http()
        .post(COMPUTERS)
        .set(admin.auth)
        .send(localBody({ repos: ['https://example.com/x.git', 'git@example.com:org/x.git'] }));
      expectStatus(res, 201);
    });
  });
});

import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { api, Body, until } from '../utils/polling';
import { createGitRepo, reposRoot } from '../utils/git-fixtures';
import { startTestApp, TestApp } from '../utils/test-app';

/** What the server's own process holds and nothing run for a computer may see. */
const CANARY = 'AP_TEST_SERVER_SECRET';

/**
 * Escapes from a managed computer's provisioning, attempted the way a member would: with what a
 * repository may hold (package-manager configuration, scripts), trying to run a program of its
 * choosing or to read the server's environment.
 */
describe('Escapes from a managed computer: its dependency install', () => {
  let root: string;

  beforeAll(async () => {
    root = await reposRoot();
    process.env[CANARY] = `canary-${randomUUID()}`;
  });

  afterAll(() => {
    delete process.env[CANARY];
  });

  async function provision(t: TestApp, member: TestUser, repo: string): Promise<Body> {
    const base = await t.app.getUrl();
    const created = await api(base, member, 'POST', '/api/v0/computers', { name: `c-${randomUUID().slice(0, 6)}`, provider: 'local', repos: [repo], autoInstallDeps: true });
    expect(created.status).toBe(201);
    const done = await until(() => api(base, member, 'GET', `/api/v0/computers/${created.body.id}`), (r) => r.body.status !== 'provisioning', 'provisioning to end');
    return done.body;
  }

  it('an .npmrc naming a git of its own (`git=./gitwrap`) does not get it run, even with scripts off', async () => {
    const marker = join(tmpdir(), `ap-gitwrap-${randomUUID()}`);
    const name = `npmrc-${randomUUID().slice(0, 6)}`;
    const lock = {
      name,
      version: '1.0.0',
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name, version: '1.0.0', dependencies: { dep: 'git+https://example.invalid/dep.git' } },
        'node_modules/dep': { version: '1.0.0', resolved: 'git+https://example.invalid/dep.git#0123456789abcdef0123456789abcdef01234567' },
      },
    };
    const repo = await createGitRepo(root, name, {
      '.npmrc': 'git=./gitwrap\n',
      gitwrap: `#!/bin/sh\nenv > '${marker}'\nexit 1\n`,
      'package.json': JSON.stringify({ name, version: '1.0.0', private: true, dependencies: { dep: 'git+https://example.invalid/dep.git' } }),
      'package-lock.json': JSON.stringify(lock),
    });
    await import('node:fs/promises').then((fs) => fs.chmod(join(repo, 'gitwrap'), 0o755));
    const { execFileSync } = await import('node:child_process');
    execFileSync('git', ['-c', 'user.email=t@example.test', '-c', 'user.name=T', 'commit', '-qam', 'exec bit'], { cwd: repo });

    const t = await startTestApp({ LOCAL_REPOS_DIR: root, PROVISIONING_STEP_TIMEOUT_MS: '60000' });
    try {
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const computer = await provision(t, member, repo);
      // The install fails (the dependency cannot be fetched), and the repository's program never ran.
      expect(computer.status).toBe('error');
      expect(existsSync(marker)).toBe(false);
    } finally {
      await t.close();
    }
  });

  it('an install script sees an environment built from an allowlist, with a home inside the workspace: nothing of the server’s', async () => {
    const name = `env-${randomUUID().slice(0, 6)}`;
    const dump = 'node -e "require(\'fs\').writeFileSync(\'seen-env.json\', JSON.stringify(process.env))"';
    const pkg = { name, version: '1.0.0', private: true, scripts: { postinstall: dump } };
    const lock = { name, version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name, version: '1.0.0' } } };
    const repo = await createGitRepo(root, name, { 'package.json': JSON.stringify(pkg), 'package-lock.json': JSON.stringify(lock) });

    const t = await startTestApp({ LOCAL_REPOS_DIR: root, LOCAL_INSTALL_SCRIPTS: 'true', PROVISIONING_STEP_TIMEOUT_MS: '60000' });
    try {
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const computer = await provision(t, member, repo);
      expect(computer.status).toBe('active');
      const workspace = join(t.config.computersDir, computer.id as string);
      const seen = JSON.parse(await readFile(join(workspace, name, 'seen-env.json'), 'utf8')) as Record<string, string>;
      expect(seen[CANARY]).toBeUndefined();
      for (const secret of ['JWT_SECRET', 'DATABASE_URL', 'SECRETS_KEY', 'TEST_DATABASE_URL', 'NODE_OPTIONS']) expect(seen[secret]).toBeUndefined();
      expect(seen.HOME.startsWith(workspace)).toBe(true);
      // The package managers' executables are pinned, whatever a repository's configuration says.
      expect(seen.npm_config_git).toMatch(/^\/.*git$/);
      expect(seen.npm_config_script_shell).toBe('/bin/sh');
    } finally {
      await t.close();
    }
  });
});

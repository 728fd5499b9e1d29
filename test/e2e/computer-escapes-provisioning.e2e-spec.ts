import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { api, Body, until } from '../utils/polling';
import { createGitRepo, npmProject, reposRoot } from '../utils/git-fixtures';
import { startTestApp, TestApp } from '../utils/test-app';
import { CANARY, databasePortOf, ESCAPE_SCRIPT, EscapeReport, expectConfined, hostService, targetsFor } from '../utils/fixtures/computer-escapes';

// Escapes attempted while a managed computer is made: its dependency install, in and out of its sandbox, and a host without one.

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
    const created = await api(base, member, 'POST', '/api/v0/computers', {
      name: `c-${randomUUID().slice(0, 6)}`,
      provider: 'local',
      repos: [repo],
      autoInstallDeps: true,
    });
    expect(created.status).toBe(201);
    const done = await until(
      () => api(base, member, 'GET', `/api/v0/computers/${created.body.id}`),
      (r) => r.body.status !== 'provisioning',
      'provisioning to end',
    );
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
    const dump = "node -e \"require('fs').writeFileSync('seen-env.json', JSON.stringify(process.env))\"";
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

describe('Escapes from a managed computer: its sandbox', () => {
  let root: string;
  let hostDir: string;
  let service: Awaited<ReturnType<typeof hostService>>;

  beforeAll(async () => {
    root = await reposRoot();
    process.env[CANARY] = `canary-${randomUUID()}`;
    // Readable by every user of the host: only the sandbox's mounts keep it out.
    hostDir = mkdtempSync(join(tmpdir(), 'ap-host-'));
    chmodSync(hostDir, 0o755);
    writeFileSync(join(hostDir, 'canary.txt'), process.env[CANARY]!, { mode: 0o644 });
    chmodSync(join(hostDir, 'canary.txt'), 0o644);
    service = await hostService();
  });

  afterAll(async () => {
    delete process.env[CANARY];
    rmSync(hostDir, { recursive: true, force: true });
    await service.close();
  });

  async function provision(base: string, member: TestUser, repos: string[]): Promise<Body> {
    const created = await api(base, member, 'POST', '/api/v0/computers', {
      name: `c-${randomUUID().slice(0, 6)}`,
      provider: 'local',
      repos,
      autoInstallDeps: true,
    });
    expect(created.status).toBe(201);
    return (
      await until(
        () => api(base, member, 'GET', `/api/v0/computers/${created.body.id}`),
        (r) => r.body.status !== 'provisioning',
        'provisioning to end',
        60_000,
      )
    ).body;
  }

  /** A computer holding a secret of its own, readable by every user of the host. */
  async function victimOf(t: TestApp, member: TestUser): Promise<{ id: string; workspace: string }> {
    const victim = await provision(await t.app.getUrl(), member, [await createGitRepo(root, `victim-${randomUUID().slice(0, 6)}`)]);
    expect(victim.status).toBe('active');
    const workspace = join(t.config.computersDir, victim.id as string);
    writeFileSync(join(workspace, 'secret.txt'), 'the victim computer secret', { mode: 0o644 });
    chmodSync(join(workspace, 'secret.txt'), 0o644);
    return { id: victim.id as string, workspace };
  }

  it('an install script reads, lists, writes and reaches nothing of the server, its host or another computer; forks are bounded; all keep working', async () => {
    const t = await startTestApp({
      LOCAL_REPOS_DIR: root,
      LOCAL_INSTALL_SCRIPTS: 'true',
      PROVISIONING_STEP_TIMEOUT_MS: '60000',
      LOCAL_SANDBOX_PROCESSES: '64',
    });
    try {
      writeFileSync(join(t.config.dataDir, 'canary.txt'), 'the server data', { mode: 0o644 });
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const victim = await victimOf(t, member);
      const targets = {
        ...targetsFor(t.config, victim.workspace, join(hostDir, 'canary.txt'), root, [['127.0.0.1', service.port], ...databasePortOf(t.config.DATABASE_URL)]),
        forks: 200,
      };
      const name = `attacker-${randomUUID().slice(0, 6)}`;
      const repo = await createGitRepo(root, name, {
        ...npmProject(name, 'node escape.js'),
        'escape.js': ESCAPE_SCRIPT,
        'targets.json': JSON.stringify(targets),
      });

      const attacker = await provision(await t.app.getUrl(), member, [repo]);
      expect(attacker.status).toBe('active');
      const report = JSON.parse(await readFile(join(t.config.computersDir, attacker.id as string, name, 'report.json'), 'utf8')) as EscapeReport;
      expectConfined(report, targets, victim.id);
      // Forking stops at LOCAL_SANDBOX_PROCESSES (this uid's processes: the install's own count too).
      expect(report.forks!.started).toBeLessThan(64);
      expect(report.forks!.refused).toBeGreaterThan(0);
      expect(service.connections()).toBe(0);
      // The server, the victim and the attacker's own computer keep working.
      expect((await t.http().get('/healthz')).status).toBe(200);
      expect((await api(await t.app.getUrl(), member, 'GET', `/api/v0/computers/${victim.id}`)).body.status).toBe('active');
      expect(readFileSync(join(victim.workspace, 'secret.txt'), 'utf8')).toBe('the victim computer secret');
    } finally {
      await t.close();
    }
  });

  it('a link planted where the computer’s home was is removed, not followed, by the server that runs as root', async () => {
    const t = await startTestApp({ LOCAL_REPOS_DIR: root, LOCAL_INSTALL_SCRIPTS: 'true', PROVISIONING_STEP_TIMEOUT_MS: '60000' });
    try {
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const planted = join(hostDir, `planted-${randomUUID().slice(0, 6)}`);
      // The first repo's install swaps the computer's temporary folder for a link to a host path; the second repo's
      // install makes the server prepare that folder again.
      const plant = `node -e "const fs = require('fs'); fs.rmSync('../.home/tmp', { recursive: true }); fs.symlinkSync('${planted}', '../.home/tmp')"`;
      const first = `plant-${randomUUID().slice(0, 6)}`;
      const second = `after-${randomUUID().slice(0, 6)}`;
      const computer = await provision(await t.app.getUrl(), member, [
        await createGitRepo(root, first, npmProject(first, plant)),
        await createGitRepo(root, second, npmProject(second)),
      ]);
      expect(computer.status).toBe('active');
      expect(existsSync(planted)).toBe(false);
      expect(lstatSync(join(t.config.computersDir, computer.id as string, '.home', 'tmp')).isDirectory()).toBe(true);
    } finally {
      await t.close();
    }
  });

  it('an install that fills the disk is stopped at LOCAL_WORKSPACE_MAX_MB: the step fails saying so, and the server keeps working', async () => {
    const t = await startTestApp({ LOCAL_REPOS_DIR: root, LOCAL_INSTALL_SCRIPTS: 'true', PROVISIONING_STEP_TIMEOUT_MS: '60000', LOCAL_WORKSPACE_MAX_MB: '20' });
    try {
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const name = `filler-${randomUUID().slice(0, 6)}`;
      // 4 MiB every 100 ms, in files of their own (each under the per-file limit), up to 400 MiB.
      const fill = `node -e "const fs = require('fs'); let i = 0; const t = setInterval(() => { fs.writeFileSync('fill-' + i, Buffer.alloc(4 << 20, 1)); if (++i === 100) clearInterval(t); }, 100)"`;
      const computer = await provision(await t.app.getUrl(), member, [await createGitRepo(root, name, npmProject(name, fill))]);
      expect(computer.status).toBe('error');
      const install = (computer.provisioningSteps as Body[]).find((step) => step.id === 'install-dependencies')!;
      expect(install.error).toMatch(/grew past its limit of 20 MiB \(LOCAL_WORKSPACE_MAX_MB\)/);
      const written = readdirSync(join(t.config.computersDir, computer.id as string, name)).filter((file) => file.startsWith('fill-')).length;
      expect(written).toBeLessThan(100);
      expect((await t.http().get('/healthz')).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('A host that cannot make the sandbox', () => {
  it('fails a managed computer’s creation with a step error that says why, and runs nothing of it', async () => {
    const root = await reposRoot();
    // A PATH with everything a computer needs but bubblewrap.
    const bin = mkdtempSync(join(tmpdir(), 'ap-no-bwrap-'));
    for (const program of ['git', 'node', 'npm', 'sh', 'socat', 'prlimit', 'setpriv', 'chown', 'du', 'env']) {
      const found = execFileSync('sh', ['-c', `command -v ${program}`], { encoding: 'utf8' }).trim();
      symlinkSync(found, join(bin, program));
    }
    const path = process.env.PATH;
    const t = await startTestApp({ LOCAL_REPOS_DIR: root, LOCAL_INSTALL_SCRIPTS: 'true' });
    process.env.PATH = bin;
    try {
      const member = await createUser(t, Role.Member, await createOrganization(t, { messageHistory: true }));
      const marker = join(t.config.dataDir, 'ran.txt');
      const name = `unsandboxed-${randomUUID().slice(0, 6)}`;
      const repo = await createGitRepo(root, name, npmProject(name, `node -e "require('fs').writeFileSync('${marker}', 'ran')"`));
      const created = await api(await t.app.getUrl(), member, 'POST', '/api/v0/computers', { name, provider: 'local', repos: [repo], autoInstallDeps: true });
      expect(created.status).toBe(201);
      const base = await t.app.getUrl();
      const done = await until(
        () => api(base, member, 'GET', `/api/v0/computers/${created.body.id}`),
        (r) => r.body.status !== 'provisioning',
        'provisioning to end',
      );
      expect(done.body.status).toBe('error');
      expect(done.body.provisioningSteps[0]).toMatchObject({
        id: 'create-computer',
        status: 'failed',
        error: expect.stringMatching(
          /^This host cannot sandbox the computer: bwrap is not installed \(Debian: apt-get install bubblewrap\)\..*LOCAL_SANDBOX=off/,
        ),
      });
      expect(existsSync(join(t.config.computersDir, created.body.id as string))).toBe(false);
      expect(existsSync(marker)).toBe(false);
    } finally {
      process.env.PATH = path;
      await t.close();
      rmSync(bin, { recursive: true, force: true });
    }
  });
});

import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createGitRepo, npmProject, reposRoot } from '../utils/git-fixtures';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { onServerDisk } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type ComputerBody = Record<string, any>;

const BYOM_BODY = { name: 'laptop', provider: 'byom', hostId: '0b9a4c1e-3f55-4d43-9d3a-2f8a7f1f0b11', remoteUser: 'dev' };

async function waitForStatus(t: TestApp, user: TestUser, id: string, statuses: string[], timeoutMs = 30_000): Promise<ComputerBody> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.http().get(`/api/v0/computers/${id}`).set(user.auth);
    if (statuses.includes(res.body.status)) return res.body;
    if (Date.now() > deadline) throw new Error(`computer ${id} still ${res.body.status}: ${JSON.stringify(res.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('Computers', () => {
  let t: TestApp;
  let root: string;
  let owner: TestUser;

  beforeAll(async () => {
    root = await reposRoot();
    t = await startTestApp({ LOCAL_REPOS_DIR: root, PROVISIONING_POLL_MS: '100' });
    owner = await createUser(t, Role.Owner);
  });

  afterAll(() => t.close());

  it('a byom computer is active at once and listed', async () => {
    const res = await t.http().post('/api/v0/computers').set(owner.auth).send(BYOM_BODY).expect(201);
    expect(res.body).toMatchObject({
      name: 'laptop',
      providerType: 'byom',
      status: 'active',
      hostId: BYOM_BODY.hostId,
      remoteUser: 'dev',
      ownerId: owner.userId,
      ownerPrincipalKind: 'user',
    });
    expect(res.body.agentToken).toMatch(/^cpt_/);
    expect(res.body.provisioningSteps).toBeUndefined();
    const list = await t.http().get('/api/v0/computers').set(owner.auth).expect(200);
    expect(list.body.computers.map((c: { id: string }) => c.id)).toContain(res.body.id);
  });

  it('a managed computer clones a local repository, installs its dependencies without their scripts and becomes active', async () => {
    const repo = await createGitRepo(root, 'app', {
      ...npmProject('app', "node -e \"require('fs').writeFileSync('installed.txt', 'yes')\""),
      'README.md': '# app\n',
    });
    const res = await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: 'box', provider: 'local', repos: [repo], autoInstallDeps: true })
      .expect(201);
    expect(res.body.status).toBe('provisioning');
    expect(res.body.provisioningSteps.map((s: { id: string }) => s.id)).toEqual(['create-computer', 'clone-repos', 'install-dependencies']);
    const done = await waitForStatus(t, owner, res.body.id, ['active', 'error'], 60_000);
    expect(done.status).toBe('active');
    expect(done.provisioningSteps.every((s: { status: string }) => s.status === 'completed')).toBe(true);
    expect(done.clonedRepoDirectories).toEqual([expect.stringMatching(new RegExp(`^\\$COMPUTERS_DIR/${res.body.id}/`))]);
    const dir = onServerDisk(done.clonedRepoDirectories[0], t.config.computersDir);
    expect(await readFile(join(dir, 'README.md'), 'utf8')).toBe('# app\n');
    // LOCAL_INSTALL_SCRIPTS is off by default: the package's postinstall never ran on the server's host.
    expect(existsSync(join(dir, 'installed.txt'))).toBe(false);
    const log = await t.http().get(`/api/v0/sessions/${done.provisioningSteps[2].installSessionId}`).set(owner.auth).expect(200);
    expect(log.body.messageCount).toBeGreaterThan(3);
    const lines = await t.app
      .get(DataSource)
      .query(`SELECT content->0->>'text' AS text FROM messages WHERE session_id = $1 ORDER BY seq`, [log.body.sessionId]);
    const text = lines.map((l: { text: string }) => l.text).join('\n');
    expect(text).toContain('without running package scripts');
    expect(text).toMatch(/\$ npm ci --no-audit --no-fund {2}\(in .*\)\n[\s\S]*\[exit 0 after/);
  });

  it('an unreachable repository fails its step cleanly, retry and delete work', async () => {
    const res = await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: 'bad', provider: 'local', repos: ['https://127.0.0.1:9/nothing.git'] })
      .expect(201);
    const failed = await waitForStatus(t, owner, res.body.id, ['error', 'active']);
    expect(failed.status).toBe('error');
    expect(failed.provisioningSteps[1]).toMatchObject({ id: 'clone-repos', status: 'failed', error: expect.stringContaining('git clone failed') });
    const retried = await t.http().post(`/api/v0/computers/${res.body.id}/retry`).set(owner.auth).expect(200);
    expect(retried.body.status).toBe('provisioning');
    await waitForStatus(t, owner, res.body.id, ['error']);
    await t.http().delete(`/api/v0/computers/${res.body.id}`).set(owner.auth).expect(204);
    expect(existsSync(join(t.config.computersDir, res.body.id))).toBe(false);
    await t.http().get(`/api/v0/computers/${res.body.id}`).set(owner.auth).expect(404);
  });

  it('a lockfile whose package manager is not installed on the host fails the install step, saying so', async () => {
    const repo = await createGitRepo(root, 'php-app', { 'composer.json': '{}', 'composer.lock': '{}' });
    const res = await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: 'php', provider: 'local', repos: [repo], autoInstallDeps: true })
      .expect(201);
    const failed = await waitForStatus(t, owner, res.body.id, ['error', 'active']);
    expect(failed.status).toBe('error');
    expect(failed.provisioningSteps[2]).toMatchObject({
      id: 'install-dependencies',
      status: 'failed',
      error: "composer is not installed on the server's host, so this step cannot run.",
    });
  });

  it("another organization's computer is 404", async () => {
    const other = await createUser(t, Role.Owner, await createOrganization(t));
    const res = await t.http().post('/api/v0/computers').set(owner.auth).send(BYOM_BODY).expect(201);
    await t.http().patch(`/api/v0/computers/${res.body.id}`).set(other.auth).send({ name: 'x' }).expect(404);
  });
});

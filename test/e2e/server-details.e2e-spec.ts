import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { createGitRepo, reposRoot } from '../utils/git-fixtures';
import { Body, until } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';

/** The repository's own folder: where the server's code runs from. */
const PROJECT_DIR = resolve(__dirname, '..', '..');

/**
 * An attacker's view: whatever a member provokes (failing provisioning, broken requests, unknown routes), no answer
 * names the server's data folder, its computers folder, the project's folder, its host name or its process id.
 */
describe('No server details in any answer', () => {
  let root: string;

  /** The server's secrets of layout, as this app has them. */
  function secretsOf(t: TestApp): Array<[string, RegExp]> {
    const literal = (text: string) => new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
    return [
      ['DATA_DIR', literal(t.config.dataDir)],
      ['COMPUTERS_DIR', literal(t.config.computersDir)],
      ['the project folder', literal(PROJECT_DIR)],
      ['the host name', new RegExp(`(?<![\\w.-])${hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`, 'i')],
      ['the pid', new RegExp(`(?<![\\w.-])${process.pid}(?![\\w-])`)],
    ];
  }

  function expectNoServerDetails(t: TestApp, label: string, text: string) {
    const found = secretsOf(t)
      .filter(([, pattern]) => pattern.test(text))
      .map(([name]) => name);
    expect({ label, found, text: found.length ? text : '' }).toEqual({ label, found: [], text: '' });
  }

  /** Headers and body of an answer. */
  const whole = (res: Response) => `${JSON.stringify(res.headers)}\n${res.text}`;

  beforeAll(async () => {
    root = await reposRoot();
  });

  describe('provisioning', () => {
    let t: TestApp;
    let owner: TestUser;

    beforeAll(async () => {
      t = await startTestApp({ LOCAL_REPOS_DIR: root, PROVISIONING_POLL_MS: '100' });
      owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    });

    afterAll(() => t.close());

    /** Everything the owner can read about a computer: itself, the list, and each step's install log. */
    async function everythingAbout(id: string): Promise<Array<[string, string]>> {
      const out: Array<[string, string]> = [];
      const one = await t.http().get(`/api/v0/computers/${id}`).set(owner.auth);
      out.push(['get', whole(one)]);
      out.push(['list', whole(await t.http().get('/api/v0/computers').set(owner.auth))]);
      for (const step of one.body.provisioningSteps as Body[]) {
        if (!step.installSessionId) continue;
        out.push([`${step.id} session`, whole(await t.http().get(`/api/v0/sessions/${step.installSessionId}`).set(owner.auth))]);
        out.push([`${step.id} log`, whole(await t.http().get(`/api/v0/sessions/${step.installSessionId}/messages?limit=100`).set(owner.auth))]);
      }
      return out;
    }

    const settled = (id: string) =>
      until(
        () => t.http().get(`/api/v0/computers/${id}`).set(owner.auth),
        (res) => res.body.status !== 'provisioning',
        'the computer to settle',
      );

    it('a clone that fails: its error and log say where in $COMPUTERS_DIR, never the folder itself', async () => {
      // A folder with no repository in it: git names the folder it was cloning into before it fails.
      await mkdir(join(root, 'not-a-repo'), { recursive: true });
      const created = await t
        .http()
        .post('/api/v0/computers')
        .set(owner.auth)
        .send({ name: 'bad', provider: 'local', repos: [join(root, 'not-a-repo')] });
      expect(created.status).toBe(201);
      expectNoServerDetails(t, 'create', whole(created));
      const done = await settled(created.body.id);
      expect(done.body.status).toBe('error');
      const clone = (done.body.provisioningSteps as Body[]).find((step) => step.id === 'clone-repos')!;
      expect(clone.status).toBe('failed');
      expect(clone.error).toMatch(/git clone failed/);
      for (const [label, text] of await everythingAbout(created.body.id)) expectNoServerDetails(t, label, text);
    });

    it('a computer that provisions: clonedRepoDirectories and its log name $COMPUTERS_DIR, never the folder itself', async () => {
      const repo = await createGitRepo(root, 'fine');
      const created = await t
        .http()
        .post('/api/v0/computers')
        .set(owner.auth)
        .send({ name: 'fine', provider: 'local', repos: [repo] });
      const done = await settled(created.body.id);
      expect(done.body.status).toBe('active');
      expect(done.body.clonedRepoDirectories).toEqual([`$COMPUTERS_DIR/${created.body.id}/fine`]);
      const log = (await everythingAbout(created.body.id)).find(([label]) => label === 'create-computer log')![1];
      expect(log).toContain(`Workspace ready at $COMPUTERS_DIR/${created.body.id}`);
      for (const [label, text] of await everythingAbout(created.body.id)) expectNoServerDetails(t, label, text);
    });
  });

  it('an internal failure of a step answers a generic line, not the system error (with its paths)', async () => {
    // COMPUTERS_DIR below a file: making the workspace fails with ENOTDIR, naming the folder.
    const blocked = await mkdtemp(join(tmpdir(), 'ap-blocked-'));
    await writeFile(join(blocked, 'file'), 'x');
    const t = await startTestApp({ COMPUTERS_DIR: join(blocked, 'file', 'computers'), LOCAL_SANDBOX: 'off', PROVISIONING_POLL_MS: '100' });
    try {
      const owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
      const created = await t.http().post('/api/v0/computers').set(owner.auth).send({ name: 'blocked', provider: 'local' });
      const done = await until(
        () => t.http().get(`/api/v0/computers/${created.body.id}`).set(owner.auth),
        (res) => res.body.status !== 'provisioning',
        'the computer to fail',
      );
      const step = (done.body.provisioningSteps as Body[])[0];
      expect(step).toMatchObject({ id: 'create-computer', status: 'failed', error: expect.stringMatching(/^Internal error: .*server's log/) });
      expect(step.error).not.toMatch(/ENOTDIR|ap-blocked/);
      const log = await t.http().get(`/api/v0/sessions/${step.installSessionId}/messages?limit=100`).set(owner.auth);
      expect(log.text).not.toMatch(/ENOTDIR|ap-blocked/);
      expectNoServerDetails(t, 'computer', whole(done));
      expectNoServerDetails(t, 'log', whole(log));
    } finally {
      await t.close();
    }
  });

  describe('error answers', () => {
    let t: TestApp;
    let member: TestUser;

    beforeAll(async () => {
      t = await startTestApp({ JWT_SECRET: 'a-test-secret-that-is-long-enough-for-hs256!' });
      member = await createUser(t, Role.Member);
    });

    afterAll(() => t.close());

    it.each([
      ['an unknown route', (t: TestApp) => t.http().get('/api/v0/nowhere').set(member.auth)],
      ['an unknown analytics route', (t: TestApp) => t.http().get('/api/v1/nowhere').set(member.auth)],
      [
        'a local repo path under the project folder',
        (t: TestApp) =>
          t
            .http()
            .post('/api/v0/computers')
            .set(member.auth)
            .send({ name: 'x', provider: 'local', repos: [PROJECT_DIR] }),
      ],
      ['a computer id that is the host name', (t: TestApp) => t.http().get(`/api/v0/computers/${hostname()}`).set(member.auth)],
      ['invalid JSON', (t: TestApp) => t.http().post('/api/v0/sessions').set(member.auth).set('content-type', 'application/json').send('{"x":')],
      [
        'a body too large',
        (t: TestApp) =>
          t
            .http()
            .post('/api/v0/sessions')
            .set(member.auth)
            .send({ title: 'x'.repeat(2 * 1024 * 1024) }),
      ],
      ['a malformed URL', (t: TestApp) => t.http().get('/api/v0/sessions/%E0%A4%A').set(member.auth)],
      ['a JWT with a bad signature', (t: TestApp) => t.http().get('/api/v0/sessions').set('Authorization', 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln')],
      ['no credentials', (t: TestApp) => t.http().get('/api/v0/sessions')],
      ['health', (t: TestApp) => t.http().get('/healthz')],
      ['liveness', (t: TestApp) => t.http().get('/livez')],
      ['the OpenAPI document', (t: TestApp) => t.http().get('/docs-json')],
    ])('%s', async (label, send) => {
      const res = await send(t);
      expectNoServerDetails(t, label, whole(res));
    });
  });
});

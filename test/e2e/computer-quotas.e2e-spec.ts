import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { createGitRepo, npmProject, reposRoot } from '../utils/git-fixtures';
import { api, Body, sleep, until } from '../utils/polling';
import { startServer } from '../utils/processes';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase } from '../utils/test-database';
import { expectStatus, expectV0Error } from '../utils/v0-errors';

const byom = () => ({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });

/** Per-organization quotas on computers: the refusal, its body, what it stores (nothing), and races at the limit. */
describe('Computer quotas', () => {
  const create = (t: TestApp, user: TestUser, body: object) => t.http().post('/api/v0/computers').set(user.auth).send(body);

  /** The organization's computers and sessions as stored, whatever the API shows. */
  async function stored(t: TestApp, organizationId: string): Promise<{ computers: number; sessions: number }> {
    const [row] = (await t.app.get(DataSource).query(
      `SELECT (SELECT count(*) FROM computers WHERE organization_id = $1)::int AS computers,
              (SELECT count(*) FROM sessions WHERE organization_id = $1)::int AS sessions`,
      [organizationId],
    )) as Array<{ computers: number; sessions: number }>;
    return row;
  }

  function expectQuota(res: Response, status: number, quota: string, limit: number): void {
    expectV0Error(res, status, 'quota_exceeded');
    expect(res.body.metadata).toEqual({ code: 'quota_exceeded', quota, limit });
    expect(res.body.detail).toContain(quota);
  }

  describe('COMPUTERS_PER_ORGANIZATION', () => {
    let t: TestApp;
    let owner: TestUser;
    let securityLog: jest.SpyInstance;

    beforeAll(async () => {
      t = await startTestApp({ COMPUTERS_PER_ORGANIZATION: '3' });
      owner = await createUser(t, Role.Owner);
    });

    beforeEach(() => {
      securityLog = jest.spyOn(Logger.prototype, 'log');
    });

    afterEach(() => securityLog.mockRestore());

    afterAll(() => t.close());

    const securityEvents = (action: string) =>
      securityLog.mock.calls.map(([entry]) => entry as Record<string, unknown>).filter((entry) => typeof entry === 'object' && entry?.security === action);

    it('at the quota the next create is 409 naming it, for every kind of computer and every member, and stores nothing', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await create(t, owner, byom());
        expectStatus(res, 201);
        ids.push(res.body.id as string);
      }
      // Creating logs who created what, and that a token was issued.
      expect(securityEvents('computer.created')).toHaveLength(3);
      expect(securityEvents('computer.created')[0]).toMatchObject({
        organizationId: owner.organizationId,
        userId: owner.userId,
        credentialId: owner.apiKeyId,
        computerId: ids[0],
        provider: 'byom',
      });
      expect(securityEvents('computer.agent_token.issued').map((e) => e.computerId)).toEqual(ids);

      const over = await create(t, owner, byom());
      expectQuota(over, 409, 'COMPUTERS_PER_ORGANIZATION', 3);
      expect(securityEvents('quota.exceeded')).toEqual([
        expect.objectContaining({
          organizationId: owner.organizationId,
          userId: owner.userId,
          credentialId: owner.apiKeyId,
          quota: 'COMPUTERS_PER_ORGANIZATION',
          limit: 3,
        }),
      ]);
      // A managed computer counts the same, and leaves no provisioning log behind; a member is counted with the organization.
      expectQuota(await create(t, owner, { name: 'managed', provider: 'local' }), 409, 'COMPUTERS_PER_ORGANIZATION', 3);
      const member = await createUser(t, Role.Member, { id: owner.organizationId, slug: owner.organizationSlug });
      expectQuota(await create(t, member, byom()), 409, 'COMPUTERS_PER_ORGANIZATION', 3);
      expect(await stored(t, owner.organizationId)).toEqual({ computers: 3, sessions: 0 });
      expect(securityEvents('computer.created')).toHaveLength(3);
      const listed = await t.http().get('/api/v0/computers').set(owner.auth);
      expect((listed.body.computers as Body[]).map((c) => c.id).sort()).toEqual([...ids].sort());

      // Deleting one frees a slot, for exactly one more.
      expectStatus(await t.http().delete(`/api/v0/computers/${ids[0]}`).set(owner.auth), 204);
      expect(securityEvents('computer.deleted')).toEqual([expect.objectContaining({ computerId: ids[0], credentialId: owner.apiKeyId })]);
      expectStatus(await create(t, member, byom()), 201);
      expectQuota(await create(t, owner, byom()), 409, 'COMPUTERS_PER_ORGANIZATION', 3);

      // Another organization has its own quota.
      const other = await createUser(t, Role.Owner);
      expectStatus(await create(t, other, byom()), 201);
    });

    it('rotating a token logs the new token issued', async () => {
      const user = await createUser(t, Role.Owner);
      const { id } = (await create(t, user, byom())).body as { id: string };
      expectStatus(await t.http().post(`/api/v0/computers/${id}/agent-token`).set(user.auth), 200);
      expect(securityEvents('computer.agent_token.issued').filter((e) => e.computerId === id)).toHaveLength(2);
    });

    it('10 concurrent creates with 2 slots left: exactly 2 succeed', async () => {
      const user = await createUser(t, Role.Owner);
      expectStatus(await create(t, user, byom()), 201);
      const results = await Promise.all(Array.from({ length: 10 }, () => create(t, user, byom())));
      expect(results.map((r) => r.status).sort()).toEqual([201, 201, ...Array(8).fill(409)]);
      for (const res of results.filter((r) => r.status === 409)) expectQuota(res, 409, 'COMPUTERS_PER_ORGANIZATION', 3);
      expect((await stored(t, user.organizationId)).computers).toBe(3);
    });
  });

  describe('PROVISIONING_PER_ORGANIZATION', () => {
    let t: TestApp;
    let owner: TestUser;
    let root: string;
    /**
     * A repo whose install waits until its gate file exists in its workspace (all a sandboxed install sees): its computer
     * stays provisioning until then.
     */
    let held: (gate: string) => Promise<string>;
    let failing: string;

    beforeAll(async () => {
      root = await reposRoot();
      held = (gate) => {
        const wait = `node -e "setInterval(() => require('fs').existsSync('../.gate-${gate}') && process.exit(0), 50)"`;
        return createGitRepo(root, `held-${gate}-${randomUUID().slice(0, 8)}`, npmProject('held', wait));
      };
      failing = await createGitRepo(root, `failing-${randomUUID().slice(0, 8)}`, npmProject('failing', 'node -e "process.exit(3)"'));
      t = await startTestApp({
        PROVISIONING_PER_ORGANIZATION: '2',
        // Room for every held step at once: the quota, not the instance's concurrency, is under test.
        PROVISIONING_CONCURRENCY: '8',
        LOCAL_REPOS_DIR: root,
        LOCAL_INSTALL_SCRIPTS: 'true',
        PROVISIONING_POLL_MS: '100',
        PROVISIONING_STEP_TIMEOUT_MS: '60000',
      });
      owner = await createUser(t, Role.Owner);
    });

    afterAll(async () => {
      // Every held install may end: nothing is left running when the app stops.
      for (const gate of ['a', 'b', 'c', 'd', 'race']) await open(gate);
      await t.close();
    });

    /** Opens a gate in every workspace there is, once the named computers have theirs. */
    const open = async (gate: string, ids: string[] = []) => {
      for (const id of ids)
        await until(
          async () => existsSync(join(t.config.computersDir, id)),
          (made) => made,
          `the workspace of ${id}`,
        );
      for (const entry of readdirSync(t.config.computersDir, { withFileTypes: true })) {
        if (entry.isDirectory() && !entry.name.startsWith('.')) writeFileSync(join(t.config.computersDir, entry.name, `.gate-${gate}`), '');
      }
    };
    const managed = async (gate: string) => ({ name: `held ${gate}`, provider: 'local', repos: [await held(gate)], autoInstallDeps: true });
    const statusOf = async (user: TestUser, id: string) => (await t.http().get(`/api/v0/computers/${id}`).set(user.auth)).body.status as string;
    const settled = (user: TestUser, id: string) =>
      until(
        () => statusOf(user, id),
        (status) => status !== 'provisioning',
        `computer ${id} to settle`,
        30_000,
      );

    it('beyond the quota a managed create is 429 naming it and stores nothing; BYOM computers do not provision; a finished one frees a slot', async () => {
      const first = await create(t, owner, await managed('a'));
      const second = await create(t, owner, await managed('a'));
      expectStatus(first, 201);
      expectStatus(second, 201);
      const before = await stored(t, owner.organizationId);
      expect(before).toEqual({ computers: 2, sessions: 2 });

      expectQuota(await create(t, owner, await managed('b')), 429, 'PROVISIONING_PER_ORGANIZATION', 2);
      expectQuota(await create(t, owner, { name: 'blank', provider: 'local' }), 429, 'PROVISIONING_PER_ORGANIZATION', 2);
      expect(await stored(t, owner.organizationId)).toEqual(before);
      expectStatus(await create(t, owner, byom()), 201);

      // Another organization provisions meanwhile.
      const other = await createUser(t, Role.Owner);
      expectStatus(await create(t, other, { name: 'blank', provider: 'local' }), 201);

      await open('a', [first.body.id, second.body.id]);
      expect(await settled(owner, first.body.id)).toBe('active');
      expect(await settled(owner, second.body.id)).toBe('active');
      const after = await create(t, owner, await managed('c'));
      expectStatus(after, 201);
      expect(after.body.status).toBe('provisioning');
      await open('c', [after.body.id]);
      await settled(owner, after.body.id);
    });

    it('retrying a failed computer beyond the quota is 429 and leaves it in error', async () => {
      const user = await createUser(t, Role.Owner);
      const broken = await create(t, user, { name: 'broken', provider: 'local', repos: [failing], autoInstallDeps: true });
      expectStatus(broken, 201);
      expect(await settled(user, broken.body.id)).toBe('error');
      const held: string[] = [];
      for (let i = 0; i < 2; i++) {
        const created = await create(t, user, await managed('d'));
        expectStatus(created, 201);
        held.push(created.body.id);
      }

      const retried = await t.http().post(`/api/v0/computers/${broken.body.id}/retry`).set(user.auth);
      expectQuota(retried, 429, 'PROVISIONING_PER_ORGANIZATION', 2);
      expect(await statusOf(user, broken.body.id)).toBe('error');

      await open('d', held);
      await until(
        async () => (await t.http().get('/api/v0/computers').set(user.auth)).body.computers as Body[],
        (computers) => computers.filter((c) => c.status === 'provisioning').length === 0,
        'the held computers to finish',
        30_000,
      );
      const again = await t.http().post(`/api/v0/computers/${broken.body.id}/retry`).set(user.auth);
      expectStatus(again, 200);
      expect(again.body.status).toBe('provisioning');
      expect(await settled(user, broken.body.id)).toBe('error');
    });

    it('6 concurrent managed creates with 2 slots: exactly 2 succeed', async () => {
      const user = await createUser(t, Role.Owner);
      const bodies = await Promise.all(Array.from({ length: 6 }, () => managed('race')));
      const results = await Promise.all(bodies.map((body) => create(t, user, body)));
      expect(results.map((r) => r.status).sort()).toEqual([201, 201, 429, 429, 429, 429]);
      expect(await stored(t, user.organizationId)).toEqual({ computers: 2, sessions: 2 });
    });
  });

  describe('LOCAL_AGENTS_PER_ORGANIZATION', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await startTestApp({ LOCAL_AGENTS_PER_ORGANIZATION: '2', PROVISIONING_PER_ORGANIZATION: '20' });
    });

    afterAll(() => t.close());

    it('a local computer beyond the agents the server runs for the organization is 409 naming the quota; BYOM and other organizations are not counted', async () => {
      const owner = await createUser(t, Role.Owner);
      const locals: string[] = [];
      for (let i = 0; i < 2; i++) {
        const res = await create(t, owner, { name: `local ${i}`, provider: 'local' });
        expectStatus(res, 201);
        locals.push(res.body.id as string);
      }
      const over = await create(t, owner, { name: 'one more', provider: 'local' });
      expectQuota(over, 409, 'LOCAL_AGENTS_PER_ORGANIZATION', 2);
      expect((await stored(t, owner.organizationId)).computers).toBe(2);
      expectStatus(await create(t, owner, byom()), 201);
      expectStatus(await create(t, await createUser(t, Role.Owner), { name: 'elsewhere', provider: 'local' }), 201);

      expectStatus(await t.http().delete(`/api/v0/computers/${locals[0]}`).set(owner.auth), 204);
      expectStatus(await create(t, owner, { name: 'replacement', provider: 'local' }), 201);
      expectQuota(await create(t, owner, { name: 'one more', provider: 'local' }), 409, 'LOCAL_AGENTS_PER_ORGANIZATION', 2);
    });

    it('with the quota lowered below what an organization has, only its oldest local computers get agents; deleting one starts the next', async () => {
      const database = await createTestDatabase();
      // No model: the agents only connect (their hostname shows it) and wait for work.
      const env = { ...database.env, PROVISIONING_POLL_MS: '100', AGENT_MODEL_BASE_URL: '', AGENT_MODEL: '' };
      const setup = await startTestApp({ ...env, LOCAL_AGENTS: 'off' }, database);
      const owner = await createUser(setup, Role.Owner, await createOrganization(setup));
      const ids: string[] = [];
      for (const name of ['oldest', 'newer']) {
        const res = await create(setup, owner, { name, provider: 'local' });
        expectStatus(res, 201);
        ids.push(res.body.id as string);
      }
      for (const id of ids) {
        await until(
          async () => (await setup.http().get(`/api/v0/computers/${id}`).set(owner.auth)).body.status,
          (status) => status === 'active',
          `${id} active`,
        );
      }
      await setup.close();

      const server = await startServer([], { ...env, LOCAL_AGENTS: 'on', LOCAL_AGENTS_PER_ORGANIZATION: '1' });
      try {
        const hostnameOf = async (id: string) => (await api(server.url, owner, 'GET', `/api/v0/computers/${id}`)).body.hostname as string | undefined;
        await until(
          () => hostnameOf(ids[0]),
          (hostname) => hostname !== undefined,
          "the oldest computer's agent to connect",
          30_000,
        );
        // The server looks at the computers every 5 s: the newer one is still without an agent after a second look.
        await sleep(6_000);
        expect(await hostnameOf(ids[1])).toBeUndefined();
        expect(server.output()).toContain(`The agent of computer ${ids[1]} does not start`);

        expect((await api(server.url, owner, 'DELETE', `/api/v0/computers/${ids[0]}`)).status).toBe(204);
        await until(
          () => hostnameOf(ids[1]),
          (hostname) => hostname !== undefined,
          "the newer computer's agent to connect",
          30_000,
        );
      } finally {
        await server.stop();
        await database.drop();
      }
    }, 90_000);

    it('concurrent local creates at the limit: exactly the free slots succeed', async () => {
      const owner = await createUser(t, Role.Owner);
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => create(t, owner, { name: `race ${i}`, provider: 'local' })));
      expect(results.map((r) => r.status).sort()).toEqual([201, 201, 409, 409, 409, 409]);
      expect((await stored(t, owner.organizationId)).computers).toBe(2);
    });
  });
});

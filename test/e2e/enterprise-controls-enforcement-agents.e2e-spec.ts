import { EventEmitter2 } from '@nestjs/event-emitter';
import { randomUUID } from 'node:crypto';
import { Role } from '../../src/modules/auth';
import type { StoredEvent } from '../../src/platform/events';
import { createUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';
import { expectStatus, expectV0Error } from '../utils/v0-errors';
import { Auth, Body, change, CONTROLS, enforcementFixture, expectModelRefused, newOrg, POLICY } from '../utils/fixtures/enterprise-controls-enforcement';

/**
 * The enterprise controls take effect: each test changes one control through
 * `PATCH /api/v0/organization/enterprise-controls` and shows, over real HTTP, the behaviour it
 * governs elsewhere in the API before and after the change (or after reverting it). Every test
 * works in an organization of its own. The app keeps the default CONTROLS_CACHE_MS, so each test
 * also shows that a change through the same instance applies at once, cache or not.
 *
 * Here, computers and their agents (which computers may be created, the policy an agent is
 * served), and how a change reaches the rest of the system: its event, and another instance.
 */

const byomBody = () => ({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
const managedBody = () => ({ name: 'box', provider: 'local' });

describe('Enterprise controls in force', () => {
  const fixture = enforcementFixture();
  const { createComputer } = fixture;
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

  describe('computers', () => {
    it('managedComputersEnabled off refuses managed computers with 403 computer_provider_disabled; BYOM is unaffected', async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);
      expectStatus(await createComputer(member.auth, managedBody()), 201);

      await change(t, owner.auth, { managedComputersEnabled: false });
      for (const user of [member, owner]) {
        const res = await createComputer(user.auth, managedBody());
        expectV0Error(res, 403, 'computer_provider_disabled');
        expect(res.body.metadata.control).toBe('managedComputersEnabled');
      }
      expectStatus(await createComputer(member.auth, byomBody()), 201);

      await change(t, owner.auth, { managedComputersEnabled: true });
      expectStatus(await createComputer(member.auth, managedBody()), 201);
      const list = await t.http().get('/api/v0/computers').set(owner.auth).expect(200);
      expect((list.body.computers as Body[]).map((c) => c.providerType as string).sort()).toEqual(['byom', 'local', 'local']);
    });

    it('byomComputersEnabled off refuses BYOM computers with 403 computer_provider_disabled; managed ones are unaffected', async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);
      expectStatus(await createComputer(member.auth, byomBody()), 201);

      await change(t, owner.auth, { byomComputersEnabled: false });
      for (const user of [member, owner]) {
        const res = await createComputer(user.auth, byomBody());
        expectV0Error(res, 403, 'computer_provider_disabled');
        expect(res.body.metadata.control).toBe('byomComputersEnabled');
      }
      expectStatus(await createComputer(member.auth, managedBody()), 201);

      await change(t, owner.auth, { byomComputersEnabled: true });
      expectStatus(await createComputer(member.auth, byomBody()), 201);
    });

    it('managedComputersAllowedEmails limits managed computers to listed people, emails compared case-insensitively', async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const listed = await createUser(t, Role.Member, org);
      const unlisted = await createUser(t, Role.Member, org);
      expectStatus(await createComputer(unlisted.auth, managedBody()), 201);

      await change(t, owner.auth, { managedComputersAllowedEmails: [listed.email.toUpperCase()] });
      expectStatus(await createComputer(listed.auth, managedBody()), 201);
      for (const user of [unlisted, owner]) {
        const res = await createComputer(user.auth, managedBody());
        expectV0Error(res, 403, 'computer_creation_not_allowed');
        expect(res.body.metadata.control).toBe('managedComputersAllowedEmails');
      }
      // The other kind's list is empty: anyone may register a BYOM computer.
      expectStatus(await createComputer(unlisted.auth, byomBody()), 201);

      await change(t, owner.auth, { managedComputersAllowedEmails: [] });
      expectStatus(await createComputer(unlisted.auth, managedBody()), 201);
    });

    it('byomComputersAllowedEmails limits BYOM computers to listed people, emails compared case-insensitively', async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const listed = await createUser(t, Role.Member, org, `Mixed.Case-${randomUUID().slice(0, 8)}@Example.Test`);
      const unlisted = await createUser(t, Role.Member, org);
      expectStatus(await createComputer(unlisted.auth, byomBody()), 201);

      await change(t, owner.auth, { byomComputersAllowedEmails: ['someone-else@example.test', listed.email.toUpperCase()] });
      expectStatus(await createComputer(listed.auth, byomBody()), 201);
      const res = await createComputer(unlisted.auth, byomBody());
      expectV0Error(res, 403, 'computer_creation_not_allowed');
      expect(res.body.metadata.control).toBe('byomComputersAllowedEmails');
      expectStatus(await createComputer(unlisted.auth, managedBody()), 201);

      await change(t, owner.auth, { byomComputersAllowedEmails: [] });
      expectStatus(await createComputer(unlisted.auth, byomBody()), 201);
    });
  });

  describe('agent policy', () => {
    it("serves the agent-side controls to users and to computers' agent tokens, keys masked, following each revision", async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);
      const guest = await createUser(t, Role.Guest, org);
      const secret = `sk-live-${randomUUID()}-QZ7x`;
      const computer = await createComputer(member.auth, byomBody());
      expectStatus(computer, 201);
      const agentToken = computer.body.agentToken as string;
      expect(agentToken).toMatch(/^cpt_/);
      const agent = { Authorization: `Bearer ${agentToken}` };
      const policy = async (auth: Auth) => {
        const res = await t.http().get(POLICY).set(auth);
        expectStatus(res, 200);
        expect(res.text).not.toContain(secret);
        return res.body as Body;
      };

      const before = await policy(member.auth);
      expect(before).toMatchObject({ revision: 0, commandBlocklist: [], customModels: [], sandbox: { enabled: false }, mcpPolicy: { enabled: true } });
      expect(before.modelPolicy.blockedModelIds).toEqual([]);

      const changed = await change(t, owner.auth, {
        commandAllowlist: ['ls'],
        commandDenylist: ['git push'],
        commandBlocklist: ['rm -rf /'],
        sandbox: { enabled: true, network: { allowedDomains: ['*.example.com'] } },
        networkPolicy: { allowedIps: ['10.0.0.0/8'] },
        mcpPolicy: { enabled: false, allowlist: ['github'] },
        mcpAutonomyOverrides: { github: 'low' },
        mcpAutonomyUrlOverrides: [{ urlPattern: 'https://mcp.example.com/*' }],
        customModels: [{ id: 'corp-llm', model: 'llama', baseUrl: 'https://llm.corp.example/v1', apiKey: secret }],
        enabledPlugins: { 'linter@corp': true },
        extraKnownMarketplaces: { corp: { source: 'github', repo: 'corp/plugins' } },
        strictKnownMarketplaces: [{ source: 'github', repo: 'corp/plugins', ref: 'main', sha: 'a'.repeat(40) }],
        modelPolicy: { blockedModelIds: ['org-blocked'] },
        userModelPolicies: { [member.userId]: { blockedModelIds: ['member-blocked'], allowCustomModels: false } },
        restrictMemberVisibility: true,
        managedComputersAllowedEmails: [owner.email],
      });
      expect(JSON.stringify(changed)).not.toContain(secret);
      const revision = changed.revision as number;
      expect(revision).toBeGreaterThan(0);

      const expected = {
        revision,
        commandAllowlist: ['ls'],
        commandDenylist: ['git push'],
        commandBlocklist: ['rm -rf /'],
        sandbox: { enabled: true, network: { allowedDomains: ['*.example.com'] } },
        networkPolicy: { allowedIps: ['10.0.0.0/8'] },
        mcpPolicy: { enabled: false, allowlist: ['github'] },
        mcpAutonomyOverrides: { github: 'low' },
        mcpAutonomyUrlOverrides: [{ urlPattern: 'https://mcp.example.com/*' }],
        customModels: [{ id: 'corp-llm', model: 'llama', baseUrl: 'https://llm.corp.example/v1', apiKey: '****QZ7x' }],
        enabledPlugins: { 'linter@corp': true },
        extraKnownMarketplaces: { corp: { source: 'github', repo: 'corp/plugins' } },
        strictKnownMarketplaces: [{ source: 'github', repo: 'corp/plugins', ref: 'main', sha: 'a'.repeat(40) }],
      };
      const asMember = await policy(member.auth);
      expect(asMember).toMatchObject(expected);
      // The caller's effective model policy: their entry over the organization's.
      expect(asMember.modelPolicy).toMatchObject({ blockedModelIds: ['member-blocked'], allowCustomModels: false, allowAllServiceModels: true });
      // Controls the server enforces itself, and the admins' lists, stay out.
      for (const field of ['userModelPolicies', 'restrictMemberVisibility', 'managedComputersAllowedEmails', 'byomComputersAllowedEmails', 'missionPolicy']) {
        expect(asMember).not.toHaveProperty(field);
      }
      expect(JSON.stringify(asMember)).not.toContain(owner.email);

      const asOwner = await policy(owner.auth);
      expect(asOwner).toMatchObject(expected);
      expect(asOwner.modelPolicy).toMatchObject({ blockedModelIds: ['org-blocked'], allowCustomModels: true });
      // A guest has no agent working for them: the policy, which lists the custom models, is not theirs to read.
      expectV0Error(await t.http().get(POLICY).set(guest.auth), 403, 'insufficient_role');

      // The computer's agent gets its owner's policy, their userModelPolicies entry included.
      const asAgent = await policy(agent);
      expect(asAgent).toMatchObject(expected);
      expect(asAgent.modelPolicy).toEqual(asMember.modelPolicy);

      // The full key is nowhere in the admins' answers either.
      for (const path of [CONTROLS, `${CONTROLS}/history`, `${CONTROLS}/history/${revision}`]) {
        const res = await t.http().get(path).set(owner.auth);
        expectStatus(res, 200);
        expect(res.text).not.toContain(secret);
      }

      // The next change shows at once, at the next revision.
      await change(t, owner.auth, { commandBlocklist: ['rm -rf /', 'shutdown'], userModelPolicies: { [member.userId]: null } });
      const next = await policy(agent);
      expect(next.revision).toBe(revision + 1);
      expect(next.commandBlocklist).toEqual(['rm -rf /', 'shutdown']);
      expect(next.modelPolicy).toMatchObject({ blockedModelIds: ['org-blocked'], allowCustomModels: true });
      expect(next.customModels[0].apiKey).toBe('****QZ7x');
    });

    it("is each organization's own", async () => {
      const first = await newOrg(t);
      const second = await newOrg(t);
      const firstOwner = await createUser(t, Role.Owner, first);
      const secondMember = await createUser(t, Role.Member, second);
      await change(t, firstOwner.auth, { commandBlocklist: ['curl'] });
      const res = await t.http().get(POLICY).set(secondMember.auth).expect(200);
      expect(res.body).toMatchObject({ revision: 0, commandBlocklist: [] });
    });
  });

  describe('enterpriseControls.settings.revised', () => {
    it('is published for a change that alters something, naming its revision, user and top-level settings; not for one that alters nothing', async () => {
      const org = await newOrg(t);
      const manager = await createUser(t, Role.Manager, org);
      const events: Array<StoredEvent<'controls.revised'>> = [];
      const listener = (event: StoredEvent<'controls.revised'>) => {
        if (event.organizationId === org.id) events.push(event);
      };
      const emitter = t.app.get(EventEmitter2);
      emitter.on('controls.revised', listener);
      try {
        const changed = await change(t, manager.auth, { restrictMemberVisibility: true, modelPolicy: { blockedModelIds: ['model-b'] } });
        await until(() => events.length > 0);
        expect(events).toHaveLength(1);
        expect(events[0]).toMatchObject({ type: 'controls.revised', organizationId: org.id, data: { revision: changed.revision, userId: manager.userId } });
        expect([...events[0].data.changedSettings].sort()).toEqual(['modelPolicy', 'restrictMemberVisibility']);

        const same = await change(t, manager.auth, { restrictMemberVisibility: true });
        expect(same.revision).toBe(changed.revision);
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(events).toHaveLength(1);
      } finally {
        emitter.off('controls.revised', listener);
      }
    });
  });
});

async function until(done: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('Timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

// PGlite lets one process hold its data directory: two instances need PostgreSQL.
(serverUrl() ? describe : describe.skip)('Enterprise controls on two instances sharing one PostgreSQL', () => {
  let database: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  const eventsOf = new Map<TestApp, Array<StoredEvent<'controls.revised'>>>();

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = { CONTROLS_CACHE_MS: '0', PROVISIONING_CONCURRENCY: '0' };
    a = await startTestApp(env, database);
    b = await startTestApp(env, database);
    for (const app of [a, b]) {
      const list: Array<StoredEvent<'controls.revised'>> = [];
      eventsOf.set(app, list);
      app.app.get(EventEmitter2).on('controls.revised', (event: StoredEvent<'controls.revised'>) => list.push(event));
    }
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  it('a change through one instance is enforced by the other at once, and reverting through the other applies on the first', async () => {
    const org = await newOrg(a);
    const owner = await createUser(a, Role.Owner, org);
    const member = await createUser(a, Role.Member, org);
    const createIn = (app: TestApp) =>
      app
        .http()
        .post('/api/v0/sessions')
        .set(member.auth)
        .send({ sessionSettings: { model: 'model-b' } });
    const createKeyIn = (app: TestApp) => app.http().post('/settings/api-keys').set(member.auth).send({ name: 'ci' });

    expectStatus(await createIn(b), 201);
    expectStatus(await createKeyIn(b), 201);
    expect((await b.http().get(POLICY).set(member.auth).expect(200)).body.revision).toBe(0);

    const changed = await change(a, owner.auth, { modelPolicy: { blockedModelIds: ['model-b'] }, restrictApiKeyCreationToManagers: true });
    // Emitted once numbered, just after the answer.
    await until(() => eventsOf.get(a)!.some((e) => e.organizationId === org.id));
    expect(
      eventsOf
        .get(a)!
        .filter((e) => e.organizationId === org.id)
        .map((e) => e.data.revision),
    ).toEqual([changed.revision]);

    // Instance B enforces what was changed through A: models, API keys, and the agent policy.
    expectModelRefused(await createIn(b), 'modelPolicy.blockedModelIds', 'model-b');
    expectV0Error(await createKeyIn(b), 403, 'api_key_creation_restricted');
    const policy = await b.http().get(POLICY).set(member.auth).expect(200);
    expect(policy.body.revision).toBe(changed.revision);
    expect(policy.body.modelPolicy.blockedModelIds).toEqual(['model-b']);
    const history = await b.http().get(`${CONTROLS}/history`).set(owner.auth).expect(200);
    expect((history.body.changes as Body[]).map((c) => c.revision)).toEqual([changed.revision]);

    // Reverted through B: A allows again.
    const reverted = await change(b, owner.auth, { modelPolicy: { blockedModelIds: [] }, restrictApiKeyCreationToManagers: false });
    expect(reverted.revision).toBe(changed.revision + 1);
    // Each instance gets the events committed through the other too (the event log's NOTIFY).
    await until(() => eventsOf.get(b)!.filter((e) => e.organizationId === org.id).length === 2);
    expect(
      eventsOf
        .get(b)!
        .filter((e) => e.organizationId === org.id)
        .map((e) => e.data.revision),
    ).toEqual([changed.revision, reverted.revision]);
    expectStatus(await createIn(a), 201);
    expectStatus(await createKeyIn(a), 201);
    expect((await a.http().get(POLICY).set(member.auth).expect(200)).body.revision).toBe(reverted.revision);
  });
});

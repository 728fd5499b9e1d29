import { EventEmitter2 } from '@nestjs/event-emitter';
import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { OrganizationFeatures } from '../../src/modules/auth/entities/organization.entity';
import type { StoredEvent } from '../../src/platform/events';
import { createOrganization, createUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';
import { expectStatus, expectV0Error } from '../utils/v0-errors';

/**
 * The enterprise controls take effect: each test changes one control through
 * `PATCH /api/v0/organization/enterprise-controls` and shows, over real HTTP, the behaviour it
 * governs elsewhere in the API before and after the change (or after reverting it). Every test
 * works in an organization of its own. The app keeps the default CONTROLS_CACHE_MS, so each test
 * also shows that a change through the same instance applies at once, cache or not.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Body = Record<string, any>;
type Org = { id: string; slug: string };
type Auth = { Authorization: string };

const CONTROLS = '/api/v0/organization/enterprise-controls';
const POLICY = '/api/v0/agent/policy';

const byomBody = () => ({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
const managedBody = () => ({ name: 'box', provider: 'local' });

async function newOrg(t: TestApp, features: OrganizationFeatures = {}): Promise<Org> {
  const org = await createOrganization(t, features);
  return { id: org.id, slug: org.slug };
}

/** Applies a merge patch to the controls as `admin`; the controls after it. */
async function change(t: TestApp, admin: Auth, settings: Body): Promise<Body> {
  const res = await t.http().patch(CONTROLS).set(admin).send({ settings });
  expectStatus(res, 200);
  return res.body as Body;
}

/** 403 model_not_allowed naming the rule, for the given field and model. */
function expectModelRefused(res: Response, rule: string, model: string, field = 'sessionSettings.model'): void {
  expectV0Error(res, 403, 'model_not_allowed');
  expect(res.body.metadata).toMatchObject({ rule, model, field });
  expect(res.body.detail).toContain(rule);
  expect(res.body.detail).toContain(model);
}

describe('Enterprise controls in force', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ PROVISIONING_CONCURRENCY: '0' });
  });

  afterAll(() => t.close());

  const createSession = (user: Auth, body: Body = {}) => t.http().post('/api/v0/sessions').set(user).send(body);
  const patchSession = (user: Auth, id: string, body: Body) => t.http().patch(`/api/v0/sessions/${id}`).set(user).send(body);
  const addMessage = (user: Auth, id: string) => t.http().post(`/api/v0/sessions/${id}/messages`).set(user).send({ text: 'hello' });
  const createComputer = (user: Auth, body: Body) => t.http().post('/api/v0/computers').set(user).send(body);

  describe('sessionDefaultSettings', () => {
    it('fills model and specModeModel into new sessions that name none, and stops once removed', async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);

      const before = await createSession(member.auth, { title: 'before' });
      expectStatus(before, 201);
      expect(before.body.sessionSettings?.model).toBeUndefined();
      expect(before.body.sessionSettings?.specModeModel).toBeUndefined();

      await change(t, owner.auth, { sessionDefaultSettings: { model: 'default-model', specModeModel: 'default-spec-model' } });

      const filled = await createSession(member.auth, { title: 'filled' });
      expectStatus(filled, 201);
      expect(filled.body.sessionSettings).toMatchObject({ model: 'default-model', specModeModel: 'default-spec-model' });
      // Stored, not only answered.
      const read = await t.http().get(`/api/v0/sessions/${filled.body.sessionId}`).set(member.auth).expect(200);
      expect(read.body.sessionSettings).toMatchObject({ model: 'default-model', specModeModel: 'default-spec-model' });

      // The session's own settings win over the defaults, field by field.
      const own = await createSession(member.auth, { sessionSettings: { model: 'my-model', reasoningEffort: 'high' } });
      expectStatus(own, 201);
      expect(own.body.sessionSettings).toMatchObject({ model: 'my-model', specModeModel: 'default-spec-model', reasoningEffort: 'high' });

      // Sessions created before the change keep what they had.
      const old = await t.http().get(`/api/v0/sessions/${before.body.sessionId}`).set(member.auth).expect(200);
      expect(old.body.sessionSettings?.model).toBeUndefined();

      await change(t, owner.auth, { sessionDefaultSettings: { model: null, specModeModel: null } });
      const after = await createSession(member.auth, { title: 'after' });
      expectStatus(after, 201);
      expect(after.body.sessionSettings?.model).toBeUndefined();
      expect(after.body.sessionSettings?.specModeModel).toBeUndefined();
    });
  });

  describe('modelPolicy', () => {
    it('a blocked model answers 403 naming modelPolicy.blockedModelIds on create, and is allowed again once unblocked', async () => {
      const org = await newOrg(t);
      const manager = await createUser(t, Role.Manager, org);
      const member = await createUser(t, Role.Member, org);

      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'model-b' } }), 201);

      await change(t, manager.auth, { modelPolicy: { blockedModelIds: ['model-b'] } });
      expectModelRefused(await createSession(member.auth, { sessionSettings: { model: 'model-b' } }), 'modelPolicy.blockedModelIds', 'model-b');
      expectModelRefused(
        await createSession(member.auth, { sessionSettings: { model: 'model-ok', specModeModel: 'model-b' } }),
        'modelPolicy.blockedModelIds',
        'model-b',
        'sessionSettings.specModeModel',
      );
      // Blocked for admins too, and other models are untouched.
      expectModelRefused(await createSession(manager.auth, { sessionSettings: { model: 'model-b' } }), 'modelPolicy.blockedModelIds', 'model-b');
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'model-ok' } }), 201);
      // Nothing was created by the refused requests.
      const list = await t.http().get('/api/v0/sessions').set(manager.auth).expect(200);
      expect(
        (list.body.sessions as Body[]).filter((s) => s.sessionSettings?.model === 'model-b' || s.sessionSettings?.specModeModel === 'model-b'),
      ).toHaveLength(1);

      await change(t, manager.auth, { modelPolicy: { blockedModelIds: [] } });
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'model-b' } }), 201);
    });

    it('a session cannot be switched to a blocked model with PATCH, and keeps its model', async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);
      const session = await createSession(member.auth, { sessionSettings: { model: 'model-a' } });
      expectStatus(session, 201);
      const id = session.body.sessionId as string;

      expectStatus(await patchSession(member.auth, id, { sessionSettings: { model: 'model-b' } }), 200);
      expectStatus(await patchSession(member.auth, id, { sessionSettings: { model: 'model-a' } }), 200);

      await change(t, owner.auth, { modelPolicy: { blockedModelIds: ['model-b'] } });
      expectModelRefused(await patchSession(member.auth, id, { sessionSettings: { model: 'model-b' } }), 'modelPolicy.blockedModelIds', 'model-b');
      expectModelRefused(
        await patchSession(member.auth, id, { sessionSettings: { specModeModel: 'model-b' } }),
        'modelPolicy.blockedModelIds',
        'model-b',
        'sessionSettings.specModeModel',
      );
      // A PATCH that names no model is not checked against the policy.
      expectStatus(await patchSession(member.auth, id, { title: 'renamed' }), 200);
      const read = await t.http().get(`/api/v0/sessions/${id}`).set(member.auth).expect(200);
      expect(read.body.sessionSettings.model).toBe('model-a');
      expect(read.body.sessionSettings.specModeModel).toBeUndefined();
      expect(read.body.title).toBe('renamed');
    });

    it('a session whose model was blocked after it chose it takes no more messages, until unblocked', async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);
      const session = await createSession(member.auth, { sessionSettings: { model: 'model-b' } });
      expectStatus(session, 201);
      const id = session.body.sessionId as string;
      const other = await createSession(member.auth, { sessionSettings: { model: 'model-a' } });

      expectStatus(await addMessage(member.auth, id), 200);

      await change(t, owner.auth, { modelPolicy: { blockedModelIds: ['model-b'] } });
      expectModelRefused(await addMessage(member.auth, id), 'modelPolicy.blockedModelIds', 'model-b');
      // The owner may write to any session, but not to one on a blocked model either.
      expectModelRefused(await addMessage(owner.auth, id), 'modelPolicy.blockedModelIds', 'model-b');
      expectStatus(await addMessage(member.auth, other.body.sessionId as string), 200);
      const read = await t.http().get(`/api/v0/sessions/${id}`).set(member.auth).expect(200);
      expect(read.body.messageCount).toBe(1);

      await change(t, owner.auth, { modelPolicy: { blockedModelIds: [] } });
      expectStatus(await addMessage(member.auth, id), 200);
    });

    it('with allowAllServiceModels off only allowedModelIds may be used; refusals name modelPolicy.allowedModelIds', async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'model-z' } }), 201);

      await change(t, owner.auth, { modelPolicy: { allowAllServiceModels: false, allowedModelIds: ['model-a'] } });
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'model-a' } }), 201);
      expectModelRefused(await createSession(member.auth, { sessionSettings: { model: 'model-z' } }), 'modelPolicy.allowedModelIds', 'model-z');
      // A session that names no model is not refused.
      expectStatus(await createSession(member.auth, {}), 201);

      await change(t, owner.auth, { modelPolicy: { allowAllServiceModels: true } });
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'model-z' } }), 201);
    });

    it('a model in requireExplicitOptInModelIds is refused until it is also in allowedModelIds', async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'preview-model' } }), 201);

      await change(t, owner.auth, { modelPolicy: { requireExplicitOptInModelIds: ['preview-model'] } });
      expectModelRefused(
        await createSession(member.auth, { sessionSettings: { model: 'preview-model' } }),
        'modelPolicy.requireExplicitOptInModelIds',
        'preview-model',
      );
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'model-a' } }), 201);

      await change(t, owner.auth, { modelPolicy: { allowedModelIds: ['preview-model'] } });
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'preview-model' } }), 201);
    });

    it('custom models need allowCustomModels and a baseUrl under allowedBaseUrls; blockedModelIds comes first', async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const member = await createUser(t, Role.Member, org);
      const custom = { id: 'corp-llm', model: 'llama', baseUrl: 'https://llm.corp.example/v1' };

      // Not yet a custom model: an ordinary model id, allowed.
      await change(t, owner.auth, { modelPolicy: { allowCustomModels: false } });
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'corp-llm' } }), 201);

      // Now it is one, and custom models are off.
      await change(t, owner.auth, { customModels: [custom] });
      expectModelRefused(await createSession(member.auth, { sessionSettings: { model: 'corp-llm' } }), 'modelPolicy.allowCustomModels', 'corp-llm');

      await change(t, owner.auth, { modelPolicy: { allowCustomModels: true } });
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'corp-llm' } }), 201);

      // A base URL list the model's baseUrl is not under; a prefix that is not a path boundary does not count.
      await change(t, owner.auth, { modelPolicy: { allowedBaseUrls: ['https://other.example', 'https://llm.corp.ex'] } });
      expectModelRefused(await createSession(member.auth, { sessionSettings: { model: 'corp-llm' } }), 'modelPolicy.allowedBaseUrls', 'corp-llm');

      await change(t, owner.auth, { modelPolicy: { allowedBaseUrls: ['https://other.example', 'https://llm.corp.example/'] } });
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'corp-llm' } }), 201);

      // Custom models are not service models: allowAllServiceModels off does not refuse them.
      await change(t, owner.auth, { modelPolicy: { allowAllServiceModels: false } });
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'corp-llm' } }), 201);

      await change(t, owner.auth, { modelPolicy: { blockedModelIds: ['corp-llm'], allowCustomModels: false } });
      expectModelRefused(await createSession(member.auth, { sessionSettings: { model: 'corp-llm' } }), 'modelPolicy.blockedModelIds', 'corp-llm');
    });

    it("a userModelPolicies entry replaces the organization's fields for that user only", async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const restricted = await createUser(t, Role.Member, org);
      const colleague = await createUser(t, Role.Member, org);

      await change(t, owner.auth, { modelPolicy: { blockedModelIds: ['org-blocked'] } });
      expectModelRefused(await createSession(restricted.auth, { sessionSettings: { model: 'org-blocked' } }), 'modelPolicy.blockedModelIds', 'org-blocked');
      expectStatus(await createSession(restricted.auth, { sessionSettings: { model: 'user-blocked' } }), 201);

      await change(t, owner.auth, { userModelPolicies: { [restricted.userId]: { blockedModelIds: ['user-blocked'] } } });
      const refused = await createSession(restricted.auth, { sessionSettings: { model: 'user-blocked' } });
      expectModelRefused(refused, 'modelPolicy.blockedModelIds', 'user-blocked');
      expect(refused.body.detail).toContain('your model policy');
      // The entry's list replaces the organization's (it is not added to it).
      expectStatus(await createSession(restricted.auth, { sessionSettings: { model: 'org-blocked' } }), 201);
      // Other users keep the organization's policy.
      expectStatus(await createSession(colleague.auth, { sessionSettings: { model: 'user-blocked' } }), 201);
      expectModelRefused(await createSession(colleague.auth, { sessionSettings: { model: 'org-blocked' } }), 'modelPolicy.blockedModelIds', 'org-blocked');

      // Fields the entry does not name stay the organization's.
      await change(t, owner.auth, { modelPolicy: { allowAllServiceModels: false, allowedModelIds: ['model-a'] } });
      expectModelRefused(await createSession(restricted.auth, { sessionSettings: { model: 'model-z' } }), 'modelPolicy.allowedModelIds', 'model-z');
      expectStatus(await createSession(restricted.auth, { sessionSettings: { model: 'model-a' } }), 201);

      // Without the entry, the organization's policy is the user's again.
      await change(t, owner.auth, { userModelPolicies: { [restricted.userId]: null }, modelPolicy: { allowAllServiceModels: true } });
      expectStatus(await createSession(restricted.auth, { sessionSettings: { model: 'user-blocked' } }), 201);
      expectModelRefused(await createSession(restricted.auth, { sessionSettings: { model: 'org-blocked' } }), 'modelPolicy.blockedModelIds', 'org-blocked');
    });
  });

  describe('restrictMemberVisibility', () => {
    it("members then see only their own sessions: others' are missing from the list and answer 404; admins still see all", async () => {
      const org = await newOrg(t, { messageHistory: true });
      const owner = await createUser(t, Role.Owner, org);
      const manager = await createUser(t, Role.Manager, org);
      const alice = await createUser(t, Role.Member, org);
      const bob = await createUser(t, Role.Member, org);
      const ownerSession = (await createSession(owner.auth, { title: 'owner' }).expect(201)).body.sessionId as string;
      const aliceSession = (await createSession(alice.auth, { title: 'alice' }).expect(201)).body.sessionId as string;
      const bobSession = (await createSession(bob.auth, { title: 'bob' }).expect(201)).body.sessionId as string;
      const ids = async (user: Auth) =>
        ((await t.http().get('/api/v0/sessions').set(user).expect(200)).body.sessions as Body[]).map((s) => s.sessionId as string).sort();
      const all = [ownerSession, aliceSession, bobSession].sort();

      expect(await ids(bob.auth)).toEqual(all);
      expectStatus(await t.http().get(`/api/v0/sessions/${aliceSession}`).set(bob.auth), 200);
      expectStatus(await t.http().get(`/api/v0/sessions/${aliceSession}/messages`).set(bob.auth), 200);

      await change(t, manager.auth, { restrictMemberVisibility: true });
      expect(await ids(bob.auth)).toEqual([bobSession]);
      expect(await ids(alice.auth)).toEqual([aliceSession]);
      expect(await ids(owner.auth)).toEqual(all);
      expect(await ids(manager.auth)).toEqual(all);
      for (const id of [aliceSession, ownerSession]) {
        expectV0Error(await t.http().get(`/api/v0/sessions/${id}`).set(bob.auth), 404, 'session_not_found');
        expectV0Error(await t.http().get(`/api/v0/sessions/${id}/messages`).set(bob.auth), 404, 'session_not_found');
        // Writes answer 404 too, not 403: the session's existence is not revealed.
        expectV0Error(await patchSession(bob.auth, id, { title: 'mine now' }), 404, 'session_not_found');
        expectV0Error(await addMessage(bob.auth, id), 404, 'session_not_found');
      }
      expectStatus(await t.http().get(`/api/v0/sessions/${bobSession}`).set(bob.auth), 200);
      expectStatus(await t.http().get(`/api/v0/sessions/${aliceSession}`).set(manager.auth), 200);

      await change(t, owner.auth, { restrictMemberVisibility: false });
      expect(await ids(bob.auth)).toEqual(all);
      expectStatus(await t.http().get(`/api/v0/sessions/${aliceSession}`).set(bob.auth), 200);
    });
  });

  describe('restrictApiKeyCreationToManagers', () => {
    it('members and guests then get 403 creating API keys; managers and owners still create them', async () => {
      const org = await newOrg(t);
      const owner = await createUser(t, Role.Owner, org);
      const manager = await createUser(t, Role.Manager, org);
      const member = await createUser(t, Role.Member, org);
      const guest = await createUser(t, Role.Guest, org);
      const createKey = (user: Auth) => t.http().post('/settings/api-keys').set(user).send({ name: 'ci' });

      for (const user of [owner, manager, member, guest]) expectStatus(await createKey(user.auth), 201);

      await change(t, manager.auth, { restrictApiKeyCreationToManagers: true });
      for (const user of [member, guest]) {
        const res = await createKey(user.auth);
        expectV0Error(res, 403, 'api_key_creation_restricted');
        expect(res.body.detail).toContain('restrictApiKeyCreationToManagers');
      }
      const created = await createKey(manager.auth);
      expectStatus(created, 201);
      expect(created.body.key).toEqual(expect.any(String));
      expectStatus(await createKey(owner.auth), 201);
      // Keys made before still work, and refused requests made none.
      const own = await t.http().get('/settings/api-keys').set(member.auth).expect(200);
      expect(own.body.apiKeys).toHaveLength(2);

      await change(t, owner.auth, { restrictApiKeyCreationToManagers: false });
      expectStatus(await createKey(member.auth), 201);
    });
  });

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

  describe('who may change the controls', () => {
    it('a member or guest cannot change them, and their attempt has no effect', async () => {
      const org = await newOrg(t);
      const member = await createUser(t, Role.Member, org);
      const guest = await createUser(t, Role.Guest, org);
      for (const user of [member, guest]) {
        const res = await t
          .http()
          .patch(CONTROLS)
          .set(user.auth)
          .send({ settings: { modelPolicy: { blockedModelIds: ['model-a'] } } });
        expectV0Error(res, 403, 'insufficient_role');
      }
      expectStatus(await createSession(member.auth, { sessionSettings: { model: 'model-a' } }), 201);
      expect((await t.http().get(POLICY).set(member.auth).expect(200)).body.revision).toBe(0);
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

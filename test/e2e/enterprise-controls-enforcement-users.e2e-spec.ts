import { Role } from '../../src/modules/auth';
import { createUser } from '../utils/factories';
import { TestApp } from '../utils/test-app';
import { expectStatus, expectV0Error } from '../utils/v0-errors';
import { Auth, Body, change, CONTROLS, enforcementFixture, expectModelRefused, newOrg, POLICY } from '../utils/fixtures/enterprise-controls-enforcement';

/**
 * The enterprise controls take effect: each test changes one control through
 * `PATCH /api/v0/organization/enterprise-controls` and shows, over real HTTP, the behaviour it
 * governs elsewhere in the API before and after the change (or after reverting it). Every test
 * works in an organization of its own. The app keeps the default CONTROLS_CACHE_MS, so each test
 * also shows that a change through the same instance applies at once, cache or not.
 *
 * Here, what the organization's users may do: the settings and models of their sessions, whose
 * sessions they see, creating API keys, and changing the controls themselves.
 */
describe('Enterprise controls in force', () => {
  const fixture = enforcementFixture();
  const { createSession, patchSession, addMessage } = fixture;
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

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
});

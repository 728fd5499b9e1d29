import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { expectStatus, expectV0Error, messageFor } from '../utils/v0-errors';
import { TestApp } from '../utils/test-app';
import { CONTROLS, controlsInputFixture, HISTORY, Json, KEY, MODEL, POLICY, strings } from '../utils/fixtures/enterprise-controls-input';

/** The enterprise controls API's references: user ids of the organization, custom models and their keys. */

const MASK = `****${KEY.slice(-4)}`;

describe('Enterprise controls API (v0): input, limits, preconditions and roles', () => {
  const fixture = controlsInputFixture();
  const { http, expectValid, freshOwner, patch, change, refusedPatch, expectInvalid, fields } = fixture;
  let t: TestApp;
  let colleague: TestUser;
  let outsider: TestUser;
  beforeAll(() => ({ t, colleague, outsider } = fixture));

  // --- user ids ----------------------------------------------------------------------------------

  describe('user ids must name users of the organization', () => {
    it('missionPolicy.allowedUserIds naming a user of another organization or nobody: 400 at each index', async () => {
      const res = await refusedPatch({ missionPolicy: { restrictedAccess: true, allowedUserIds: [colleague.userId, outsider.userId, randomUUID()] } });
      expectInvalid(res, 'settings.missionPolicy.allowedUserIds[1]');
      expect(res.body.metadata.errors).toEqual([
        { field: 'settings.missionPolicy.allowedUserIds[1]', message: 'is not a user of your organization' },
        { field: 'settings.missionPolicy.allowedUserIds[2]', message: 'is not a user of your organization' },
      ]);
    });

    it('userModelPolicies keyed by a user of another organization or nobody: 400 at the key', async () => {
      for (const id of [outsider.userId, randomUUID()]) {
        const res = await refusedPatch({ userModelPolicies: { [id]: { allowCustomModels: false } } });
        expectInvalid(res, `settings.userModelPolicies.${id}`);
        expect(messageFor(res, `settings.userModelPolicies.${id}`)).toBe('is not a user of your organization');
      }
    });

    it('userModelPolicies keyed by something that is not a user id: 400 at the key, not a 500', async () => {
      const res = await refusedPatch({ userModelPolicies: { 'not-a-user-id': { allowCustomModels: false } } });
      expectInvalid(res, 'settings.userModelPolicies.not-a-user-id');
    });

    it('a userModelPolicies entry is checked like modelPolicy: a bad value inside it is a 400 at its path', async () => {
      const base = `settings.userModelPolicies.${colleague.userId}`;
      expectInvalid(await refusedPatch({ userModelPolicies: { [colleague.userId]: { allowedBaseUrls: ['ftp://x'] } } }), `${base}.allowedBaseUrls[0]`);
      expectInvalid(await refusedPatch({ userModelPolicies: { [colleague.userId]: { allowCustomModels: 'no' } } }), `${base}.allowCustomModels`);
      expectInvalid(await refusedPatch({ userModelPolicies: { [colleague.userId]: [] } }), base);
    });

    it('a user id written in upper case is refused at the key as sent: ids are written in lower case, as the API writes them', async () => {
      const user = await freshOwner();
      const member = await createUser(t, Role.Member, { id: user.organizationId, slug: user.organizationSlug });
      const key = member.userId.toUpperCase();
      const res = await refusedPatch({ userModelPolicies: { [key]: { blockedModelIds: ['model-x'] } } }, user);
      expectInvalid(res, `settings.userModelPolicies.${key}`);
      expect(messageFor(res, `settings.userModelPolicies.${key}`)).toMatch(/lower-case UUID/);
    });

    it('an unknown user id in upper case: 400 at the key as it was sent', async () => {
      const id = randomUUID().toUpperCase();
      const res = await refusedPatch({ userModelPolicies: { [id]: { allowCustomModels: false } } });
      expectInvalid(res, `settings.userModelPolicies.${id}`);
      const listed = await refusedPatch({ missionPolicy: { allowedUserIds: [id] } });
      expectInvalid(listed, 'settings.missionPolicy.allowedUserIds[0]');
    });

    it('two userModelPolicies entries naming the same user in different cases: 400, neither dropped silently', async () => {
      const user = await freshOwner();
      const { userId: id } = await createUser(t, Role.Member, { id: user.organizationId, slug: user.organizationSlug });
      const res = await refusedPatch({ userModelPolicies: { [id.toUpperCase()]: { blockedModelIds: ['a'] }, [id]: { blockedModelIds: ['b'] } } }, user);
      expectV0Error(res, 400, 'validation_failed');
      expect(fields(res)[0]).toMatch(/^settings\.userModelPolicies\./);
    });

    it('users of the same organization are accepted, and shape the agent policy of that user', async () => {
      const user = await freshOwner();
      const org = { id: user.organizationId, slug: user.organizationSlug };
      const member = await createUser(t, Role.Member, org);
      const res = await change(user, {
        missionPolicy: { restrictedAccess: true, allowedUserIds: [member.userId, user.userId] },
        userModelPolicies: { [member.userId]: { allowCustomModels: false, blockedModelIds: ['model-x'] } },
      });
      expect(res.settings.missionPolicy.allowedUserIds).toEqual([member.userId, user.userId]);
      expect(res.settings.userModelPolicies).toEqual({ [member.userId]: { allowCustomModels: false, blockedModelIds: ['model-x'] } });
      const policy = await http().get(POLICY).set(member.auth);
      expectStatus(policy, 200);
      expect(policy.body.modelPolicy).toMatchObject({ allowCustomModels: false, blockedModelIds: ['model-x'] });
    });
  });

  // --- custom models and their keys --------------------------------------------------------------

  describe('custom models and their keys', () => {
    /** Every response body and text a test saw, to check no key leaked into any. */
    const seen: Response[] = [];
    const watch = <R extends Response>(res: R): R => {
      seen.push(res);
      return res;
    };
    const expectNoKeyIn = (res: Response, key = KEY) => {
      expect(res.text).not.toContain(key);
      expect(JSON.stringify(res.body)).not.toContain(key);
      expect(JSON.stringify(res.headers)).not.toContain(key);
    };

    afterAll(() => {
      for (const res of seen) expectNoKeyIn(res);
    });

    /** An organization holding MODEL with KEY, at revision 1. */
    async function withKey(): Promise<TestUser> {
      const user = await freshOwner();
      const res = watch(await patch(user, { customModels: [{ ...MODEL, apiKey: KEY }] }));
      expectStatus(res, 200);
      expect(res.body.settings.customModels[0].apiKey).toBe(MASK);
      return user;
    }

    it('duplicate ids: 400 at the second one', async () => {
      const res = watch(await refusedPatch({ customModels: [MODEL, { ...MODEL, model: 'other' }, { ...MODEL, id: 'custom:m2' }] }));
      expectInvalid(res, 'settings.customModels[1].id');
      expect(messageFor(res, 'settings.customModels[1].id')).toMatch(/duplicates customModels\[0\]\.id/);
      expect(fields(res)).toEqual(['settings.customModels[1].id']);
    });

    it('a masked apiKey for a model with no stored key: 400 at the apiKey', async () => {
      const res = watch(await refusedPatch({ customModels: [{ ...MODEL, apiKey: '****abcd' }] }));
      expectInvalid(res, 'settings.customModels[0].apiKey');
      expect(messageFor(res, 'settings.customModels[0].apiKey')).toMatch(/no stored value here to keep/);
    });

    it("a masked apiKey that is not the stored key's mask: 400 at the apiKey", async () => {
      const user = await withKey();
      for (const wrong of ['****abcd', '****']) {
        const res = watch(await refusedPatch({ customModels: [{ ...MODEL, apiKey: wrong }] }, user));
        expectInvalid(res, 'settings.customModels[0].apiKey');
        expect(messageFor(res, 'settings.customModels[0].apiKey')).toMatch(/not the stored value's mask/);
      }
    });

    it("the stored key's mask under another model id: 400 (a mask stands only for its own model's key)", async () => {
      const user = await withKey();
      const res = watch(await refusedPatch({ customModels: [{ ...MODEL, id: 'custom:renamed', apiKey: MASK }] }, user));
      expectInvalid(res, 'settings.customModels[0].apiKey');
    });

    it("the stored key's mask sent back keeps the key and, changing nothing else, creates no revision", async () => {
      const user = await withKey();
      const same = watch(await patch(user, { customModels: [{ ...MODEL, apiKey: MASK }] }));
      expectStatus(same, 200);
      expect(same.body).toMatchObject({ revision: 1, settings: { customModels: [{ ...MODEL, apiKey: MASK }] } });
      expect(same.headers.etag).toBe('"1"');
      // With another change: a new revision, the key still the stored one (same mask, not in the diff).
      const renamed = watch(await patch(user, { customModels: [{ ...MODEL, apiKey: MASK, displayName: 'Model One' }] }));
      expectStatus(renamed, 200);
      expect(renamed.body).toMatchObject({ revision: 2, settings: { customModels: [{ apiKey: MASK, displayName: 'Model One' }] } });
      const diff = watch(await http().get(`${HISTORY}/2`).set(user.auth));
      expectStatus(diff, 200);
      expectValid('revision', diff.body);
      expect(diff.body.diff).toEqual([{ op: 'add', path: '/customModels/0/displayName', value: 'Model One' }]);
    });

    it('the full key appears in no response: GET, history, revision, agent policy', async () => {
      const user = await withKey();
      const responses = [
        await http().get(CONTROLS).set(user.auth),
        await http().get(HISTORY).set(user.auth),
        await http().get(`${HISTORY}/1`).set(user.auth),
        await http().get(POLICY).set(user.auth),
      ].map(watch);
      for (const res of responses) {
        expectStatus(res, 200);
        expectNoKeyIn(res);
        expect(res.text).toContain(MASK);
      }
      expectValid('history', responses[1].body);
      expectValid('revision', responses[2].body);
    });

    it.each([
      ['with another field of the wrong type', { customModels: [{ ...MODEL, apiKey: KEY, maxContextLimit: 0 }] }],
      ['with an unknown field', { customModels: [{ ...MODEL, apiKey: KEY }], foo: 1 }],
      [
        'with a duplicate id',
        {
          customModels: [
            { ...MODEL, apiKey: KEY },
            { ...MODEL, apiKey: `${KEY}-2` },
          ],
        },
      ],
      ['with a user who is not in the organization', { customModels: [{ ...MODEL, apiKey: KEY }], missionPolicy: { allowedUserIds: [randomUUID()] } }],
      ['over the snapshot limit', { customModels: [{ ...MODEL, apiKey: KEY }], commandAllowlist: strings(1000, 'allow', 2048) }],
      ['with a control character in the key', { customModels: [{ ...MODEL, apiKey: `${KEY}\n` }] }],
      ['with a key too long', { customModels: [{ ...MODEL, apiKey: KEY.repeat(200) }] }],
    ])('a refused change %s does not echo the key', async (_, settings) => {
      const res = watch(await refusedPatch(settings));
      expectV0Error(res, 400, 'validation_failed');
      expectNoKeyIn(res);
    });

    it('a refused change on an organization with a stored key does not echo it', async () => {
      const user = await withKey();
      const res = watch(await refusedPatch({ customModels: [{ ...MODEL, apiKey: MASK, index: -1 }] }, user));
      expectInvalid(res, 'settings.customModels[0].index');
      const mismatch = watch(await refusedPatch({ customModels: [{ ...MODEL, apiKey: MASK }] }, user, { 'If-Match': '"0"' }));
      expectV0Error(mismatch, 412, 'revision_mismatch');
    });

    it('diffs of revisions that add, shift and replace keyed models hold only masks', async () => {
      const user = await withKey();
      const newKey = 'sk-live-9999999999999999-NEW1';
      const replacement = 'sk-live-8888888888888888-REPL';
      const first = { id: 'custom:first', model: 'vendor-first', baseUrl: 'https://llm.example.com/v2' };
      // A keyed model inserted before the keyed one, which shifts to index 1.
      const inserted = await change(user, {
        customModels: [
          { ...first, apiKey: newKey },
          { ...MODEL, apiKey: MASK },
        ],
      });
      expect(inserted.settings.customModels.map((m: Json) => m.apiKey)).toEqual(['****NEW1', MASK]);
      // The shifted model's key replaced.
      const replaced = await change(user, {
        customModels: [
          { ...first, apiKey: '****NEW1' },
          { ...MODEL, apiKey: replacement },
        ],
      });
      expect(JSON.stringify(replaced)).not.toContain(replacement);
      for (const revision of [1, 2, 3]) {
        const res = await http().get(`${HISTORY}/${revision}`).set(user.auth);
        expectStatus(res, 200);
        expectValid('revision', res.body);
        for (const key of [KEY, newKey, replacement]) expectNoKeyIn(res, key);
        expect(res.body.diff.length).toBeGreaterThan(0);
      }
      const latest = await http().get(`${HISTORY}/3`).set(user.auth);
      expect(latest.body.settings.customModels.map((m: Json) => m.apiKey)).toEqual(['****NEW1', '****REPL']);
      expect(JSON.stringify(latest.body.diff)).toContain('****REPL');
    });

    it("reordering models with their masks keeps each model's own key", async () => {
      const user = await freshOwner();
      const other = { ...MODEL, id: 'custom:m2', model: 'vendor-model-2' };
      const otherKey = 'sk-live-0000000000000000-OTHR';
      const set = watch(
        await patch(user, {
          customModels: [
            { ...MODEL, apiKey: KEY },
            { ...other, apiKey: otherKey },
          ],
        }),
      );
      expectStatus(set, 200);
      expect(set.text).not.toContain(otherKey);
      const swapped = await change(user, {
        customModels: [
          { ...other, apiKey: '****OTHR' },
          { ...MODEL, apiKey: MASK },
        ],
      });
      expect(swapped.revision).toBe(2);
      expect(swapped.settings.customModels.map((m: Json) => [m.id, m.apiKey])).toEqual([
        ['custom:m2', '****OTHR'],
        ['custom:m1', MASK],
      ]);
      const again = await change(user, {
        customModels: [
          { ...other, apiKey: '****OTHR' },
          { ...MODEL, apiKey: MASK },
        ],
      });
      expect(again.revision).toBe(2);
    });

    it('a short key is masked as **** and sending **** back keeps it', async () => {
      const user = await freshOwner();
      const short = 'sk-short1';
      const set = watch(await patch(user, { customModels: [{ ...MODEL, apiKey: short }] }));
      expectStatus(set, 200);
      expect(set.body.settings.customModels[0].apiKey).toBe('****');
      expect(set.text).not.toContain(short);
      const kept = await change(user, { customModels: [{ ...MODEL, apiKey: '****' }] });
      expect(kept.revision).toBe(1);
    });
  });
});

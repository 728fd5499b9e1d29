import { randomUUID } from 'node:crypto';
import { TestUser } from '../utils/factories';
import { expectStatus, expectV0Error, messageFor } from '../utils/v0-errors';
import { CONTROLS, controlsInputFixture, HISTORY, Json, MARKETPLACE, MODEL, nest, SHA40 } from '../utils/fixtures/enterprise-controls-input';

/**
 * The enterprise controls API refuses ill-typed changes (wrong types, unknown fields, nulls where a merge
 * patch cannot take them), leaving the controls as they were.
 */

/** The spec's settings fields, each with a value of the wrong type. */
const WRONG_TYPES: Array<[string, unknown]> = [
  ['sessionDefaultSettings', 'worktree'],
  ['mcpAutonomyOverrides', ['server']],
  ['mcpAutonomyUrlOverrides', { urlPattern: 'x' }],
  ['cloudSessionSync', 'true'],
  ['wikiCloudSync', 1],
  ['includeCoAuthoredByAgent', 'yes'],
  ['enableAgentShield', 0],
  ['ideAutoConnect', 'false'],
  ['commandAllowlist', 'ls'],
  ['commandDenylist', { rm: true }],
  ['commandBlocklist', 5],
  ['customModels', MODEL],
  ['modelPolicy', true],
  ['mcpPolicy', ['enabled']],
  ['missionPolicy', 'restricted'],
  ['userModelPolicies', []],
  ['enabledPlugins', 'plugin@market'],
  ['extraKnownMarketplaces', [MARKETPLACE]],
  ['strictKnownMarketplaces', MARKETPLACE],
  ['networkPolicy', '10.0.0.0/8'],
  ['sandbox', false],
  ['restrictMemberVisibility', 'true'],
  ['restrictApiKeyCreationToManagers', 1],
  ['managedComputersEnabled', 'on'],
  ['managedComputersAllowedEmails', 'a@example.com'],
  ['byomComputersEnabled', {}],
  ['byomComputersAllowedEmails', { 0: 'a@example.com' }],
  ['disableAutoUpdate', []],
  ['sessionRetentionDays', '30'],
  ['serviceRouterGuidance', 42],
  ['serviceRouterRules', 'always'],
];

describe('Enterprise controls API (v0): input, limits, preconditions and roles', () => {
  const fixture = controlsInputFixture();
  const { http, freshOwner, read, change, refused, refusedPatch, expectInvalid, fields } = fixture;
  let owner: TestUser;
  let colleague: TestUser;
  beforeAll(() => ({ owner, colleague } = fixture));

  // --- wrong types -----------------------------------------------------------------------------

  describe('wrong types', () => {
    it('the table below covers every settings field GET answers, and sessionRetentionDays', async () => {
      const { settings } = await read(owner);
      expect(WRONG_TYPES.map(([field]) => field).sort()).toEqual([...Object.keys(settings), 'sessionRetentionDays'].sort());
    });

    it.each(WRONG_TYPES)('settings.%s of the wrong type (%j): 400 naming it, nothing changed', async (field, value) => {
      expectInvalid(await refusedPatch({ [field]: value }), `settings.${field}`);
    });

    it.each([
      ['sessionDefaultSettings.runInWorktree', 'yes'],
      ['sessionDefaultSettings.model', 5],
      ['sessionDefaultSettings.specModeModel', ['m']],
      ['modelPolicy.allowedModelIds', 'gpt'],
      ['modelPolicy.blockedModelIds', { m: true }],
      ['modelPolicy.allowCustomModels', 'true'],
      ['modelPolicy.allowedBaseUrls', 'https://llm.example.com'],
      ['modelPolicy.allowAllServiceModels', 1],
      ['modelPolicy.isFastModelsAllowed', 0],
      ['modelPolicy.requireExplicitOptInModelIds', 7],
      ['modelPolicy.allowServiceRouterByok', 'no'],
      ['mcpPolicy.enabled', 'yes'],
      ['mcpPolicy.allowlist', 'server'],
      ['missionPolicy.restrictedAccess', 1],
      ['missionPolicy.allowedUserIds', randomUUID()],
      ['networkPolicy.allowedIps', '10.0.0.1'],
      ['sandbox.enabled', 'true'],
      ['sandbox.filesystem', []],
      ['sandbox.filesystem.allowWrite', '/tmp'],
      ['sandbox.filesystem.denyRead', { path: '/etc' }],
      ['sandbox.network', 'open'],
      ['sandbox.network.allowedDomains', 'example.com'],
      ['sandbox.network.allowAllUnixSockets', 'yes'],
      ['sandbox.network.allowLocalBinding', 1],
      ['sandbox.network.httpProxyPort', '8080'],
      ['sandbox.network.httpProxyPort', 0],
      ['sandbox.network.httpProxyPort', 65536],
      ['sandbox.network.httpProxyPort', 1.5],
      ['sandbox.network.httpProxyPort', -80],
      ['sandbox.network.httpProxyPort', true],
      ['sandbox.network.socksProxyPort', '1080'],
      ['sandbox.network.socksProxyPort', 0],
      ['sandbox.network.socksProxyPort', 65536],
      ['sandbox.network.socksProxyPort', 1080.5],
    ])('settings.%s = %j: 400 naming it, nothing changed', async (path, value) => {
      expectInvalid(await refusedPatch(nest(path, value)), `settings.${path}`);
    });

    it.each([
      ['modelPolicy.requireExplicitOptInModelIds', [5], 'settings.modelPolicy.requireExplicitOptInModelIds[0]'],
      ['commandAllowlist', ['ls', 5], 'settings.commandAllowlist[1]'],
      ['mcpAutonomyOverrides', { github: 'max' }, 'settings.mcpAutonomyOverrides.github'],
      ['mcpAutonomyOverrides', { github: 2 }, 'settings.mcpAutonomyOverrides.github'],
      ['enabledPlugins', { 'p@m': 'yes' }, 'settings.enabledPlugins.p@m'],
      ['serviceRouterRules', [{ guidance: 5, when: 'x' }], 'settings.serviceRouterRules[0].guidance'],
      ['mcpAutonomyUrlOverrides', [{ urlPattern: 7 }], 'settings.mcpAutonomyUrlOverrides[0].urlPattern'],
      ['mcpAutonomyUrlOverrides', [{ urlPattern: 'https://mcp.example.com/*', level: 'always' }], 'settings.mcpAutonomyUrlOverrides[0].level'],
    ])('an entry of settings.%s of the wrong type (%j): 400 at its path', async (field, value, path) => {
      expectInvalid(await refusedPatch(nest(field, value)), path);
    });

    describe('custom models', () => {
      const model = (extra: Json) => ({ customModels: [{ ...MODEL, ...extra }] });

      it.each([
        ['index', -1],
        ['index', 1.5],
        ['index', '1'],
        ['maxContextLimit', 0],
        ['maxContextLimit', -5],
        ['maxContextLimit', '128000'],
        ['thinkingMaxTokens', 0],
        ['maxOutputTokens', 2.5],
        ['enableThinking', 'true'],
        ['noImageSupport', 1],
        ['useInRouter', 'yes'],
        ['baseUrl', 'ftp://llm.example.com'],
        ['baseUrl', 'file:///etc/passwd'],
        ['baseUrl', 'llm.example.com/v1'],
        ['baseUrl', 'https://'],
        ['baseUrl', 5],
        ['id', ''],
        ['id', '   '],
        ['id', 5],
        ['model', 'a\nb'],
        ['apiKey', 12345],
        ['apiKey', ''],
        ['displayName', false],
        ['baseModelId', 3],
        ['extraHeaders', 'Authorization: x'],
        ['extraArgs', ['temperature']],
        ['cloudModelConfig', 'aws'],
      ])('customModels[0].%s = %j: 400 naming it', async (field, value) => {
        expectInvalid(await refusedPatch(model({ [field]: value })), `settings.customModels[0].${field}`);
      });

      it.each([['id'], ['model'], ['baseUrl']])('customModels[0] without %s: 400 naming it', async (field) => {
        const incomplete: Json = { ...MODEL };
        delete incomplete[field];
        const res = await refusedPatch({ customModels: [incomplete] });
        expectInvalid(res, `settings.customModels[0].${field}`);
        expect(messageFor(res, `settings.customModels[0].${field}`)).toBe('is required');
      });

      it.each([
        ['a name with a space', { 'X Bad': 'v' }],
        ['a name with a colon', { 'X-Bad:': 'v' }],
        ['an empty name', { '': 'v' }],
      ])('extraHeaders with %s: 400 at extraHeaders', async (_, extraHeaders) => {
        const res = await refusedPatch(model({ extraHeaders }));
        expectV0Error(res, 400, 'validation_failed');
        expect(fields(res)[0]).toMatch(/^settings\.customModels\[0\]\.extraHeaders/);
      });

      it.each([
        ['a number', 5],
        ['an object', { v: 1 }],
        ['a line break', 'a\r\nInjected: 1'],
      ])('an extraHeaders value that is %s: 400 naming the header', async (_, value) => {
        expectInvalid(await refusedPatch(model({ extraHeaders: { 'X-Team': value } })), 'settings.customModels[0].extraHeaders.X-Team');
      });

      it('cloudModelConfig with an unknown field: 400 naming it', async () => {
        const res = await refusedPatch(model({ cloudModelConfig: { cloudRegion: 'eu-west-1', cloudZone: 'a' } }));
        expectInvalid(res, 'settings.customModels[0].cloudModelConfig.cloudZone');
        expect(messageFor(res, 'settings.customModels[0].cloudModelConfig.cloudZone')).toBe('is not an accepted field');
      });

      it('cloudModelConfig with a value of the wrong type: 400 naming it', async () => {
        expectInvalid(await refusedPatch(model({ cloudModelConfig: { cloudRegion: 5 } })), 'settings.customModels[0].cloudModelConfig.cloudRegion');
      });

      it('every bad field of a model is listed, the first in detail', async () => {
        const res = await refusedPatch(model({ index: -1, enableThinking: 'yes', maxContextLimit: 0 }));
        expectV0Error(res, 400, 'validation_failed');
        expect(fields(res)).toEqual(
          expect.arrayContaining(['settings.customModels[0].index', 'settings.customModels[0].enableThinking', 'settings.customModels[0].maxContextLimit']),
        );
        expect(res.body.detail).toMatch(/^settings\.customModels\[0\]\.\w+: .+ \(and 2 more problems\)$/);
      });
    });
  });

  // --- unknown fields --------------------------------------------------------------------------

  describe('unknown fields', () => {
    it('beside settings in the body (revision): 400 "is not an accepted field"', async () => {
      const res = await refused(owner, () =>
        http()
          .patch(CONTROLS)
          .set(owner.auth)
          .send({ settings: { cloudSessionSync: false }, revision: 0 }),
      );
      expectInvalid(res, 'revision');
      expect(messageFor(res, 'revision')).toBe('is not an accepted field');
    });

    it.each([
      ['settings.foo', { foo: true }],
      ['settings.sessionDefaultSettings.worktree', { sessionDefaultSettings: { worktree: true } }],
      ['settings.modelPolicy.allowEverything', { modelPolicy: { allowEverything: true } }],
      ['settings.mcpPolicy.denylist', { mcpPolicy: { denylist: [] } }],
      ['settings.missionPolicy.owners', { missionPolicy: { owners: [] } }],
      ['settings.networkPolicy.deniedIps', { networkPolicy: { deniedIps: [] } }],
      ['settings.sandbox.mode', { sandbox: { mode: 'strict' } }],
      ['settings.sandbox.filesystem.allowExecute', { sandbox: { filesystem: { allowExecute: [] } } }],
      ['settings.sandbox.network.foo', { sandbox: { network: { foo: 1 } } }],
      ['settings.customModels[0].foo', { customModels: [{ ...MODEL, foo: 'bar' }] }],
      ['settings.mcpAutonomyUrlOverrides[0].scope', { mcpAutonomyUrlOverrides: [{ urlPattern: 'https://mcp.example.com/*', scope: 'all' }] }],
      ['settings.strictKnownMarketplaces[0].url', { strictKnownMarketplaces: [{ ...MARKETPLACE, url: 'x' }] }],
      ['settings.extraKnownMarketplaces.acme.sha', { extraKnownMarketplaces: { acme: { source: 'github', repo: 'acme/p', sha: SHA40 } } }],
      ['settings.serviceRouterRules[0].model', { serviceRouterRules: [{ guidance: 'g', when: 'w', model: 'm' }] }],
    ])('%s: 400 "is not an accepted field"', async (field, settings) => {
      const res = await refusedPatch(settings);
      expectInvalid(res, field);
      expect(messageFor(res, field)).toBe('is not an accepted field');
    });

    it("a userModelPolicies entry with an unknown field: 400 at the entry's field", async () => {
      const field = `settings.userModelPolicies.${colleague.userId}.maxTokens`;
      const res = await refusedPatch({ userModelPolicies: { [colleague.userId]: { allowCustomModels: false, maxTokens: 5 } } });
      expectInvalid(res, field);
      expect(messageFor(res, field)).toBe('is not an accepted field');
    });

    it('several unknown fields at several levels are all listed', async () => {
      const res = await refusedPatch({ foo: 1, sandbox: { network: { bar: 2 } } });
      expectV0Error(res, 400, 'validation_failed');
      expect(fields(res)).toEqual(expect.arrayContaining(['settings.foo', 'settings.sandbox.network.bar']));
    });
  });

  // --- null in a merge patch -------------------------------------------------------------------

  describe('null in a merge patch', () => {
    it.each([
      ['sandbox'],
      ['modelPolicy'],
      ['commandAllowlist'],
      ['customModels'],
      ['userModelPolicies'],
      ['cloudSessionSync'],
      ['serviceRouterGuidance'],
      ['sandbox.network.allowedDomains'],
      ['sandbox.network'],
      ['sandbox.filesystem.allowWrite'],
      ['sessionDefaultSettings.runInWorktree'],
      ['modelPolicy.allowCustomModels'],
      ['missionPolicy.allowedUserIds'],
    ])('null on the required settings.%s: 400 saying it is required and null would remove it', async (path) => {
      const field = `settings.${path}`;
      const res = await refusedPatch(nest(path, null));
      expectInvalid(res, field);
      expect(messageFor(res, field)).toMatch(/is required; null would remove it/);
    });

    it('null on a required field beside a valid change: refused whole, the valid part not applied', async () => {
      const res = await refusedPatch({ restrictMemberVisibility: true, sandbox: { enabled: true, network: { allowedDomains: null } } });
      expectInvalid(res, 'settings.sandbox.network.allowedDomains');
    });

    it.each([
      ['sessionRetentionDays', 30],
      ['sessionDefaultSettings.model', 'model-a'],
      ['sessionDefaultSettings.specModeModel', 'model-b'],
      ['sandbox.network.httpProxyPort', 8080],
      ['sandbox.network.socksProxyPort', 1080],
    ])('null on the optional settings.%s removes it, in a new revision', async (path, value) => {
      const user = await freshOwner();
      const set = await change(user, nest(path, value));
      const get = (settings: Json) => path.split('.').reduce<Json | undefined>((node, key) => node?.[key], settings);
      expect(get(set.settings)).toBe(value);
      const removed = await change(user, nest(path, null));
      expect(removed.revision).toBe(set.revision + 1);
      const parent = path.split('.').slice(0, -1);
      const container = parent.reduce<Json>((node, key) => node[key], removed.settings);
      expect(container).not.toHaveProperty(path.split('.').pop()!);
      // The sibling fields stay.
      if (path.startsWith('sandbox.network.')) expect(removed.settings.sandbox.network).toMatchObject({ allowedDomains: [], allowLocalBinding: false });
      const revision = await http().get(`${HISTORY}/${removed.revision}`).set(user.auth);
      expectStatus(revision, 200);
      expect(revision.body.diff).toEqual([{ op: 'remove', path: `/${path.split('.').join('/')}` }]);
    });

    it('null on an optional field that is absent changes nothing', async () => {
      const user = await freshOwner();
      const res = await change(user, { sessionRetentionDays: null, sandbox: { network: { httpProxyPort: null } } });
      expect(res.revision).toBe(0);
    });

    it('null removes a map entry', async () => {
      const user = await freshOwner();
      await change(user, { enabledPlugins: { 'a@m': true, 'b@m': false } });
      const res = await change(user, { enabledPlugins: { 'a@m': null } });
      expect(res.settings.enabledPlugins).toEqual({ 'b@m': false });
    });
  });
});

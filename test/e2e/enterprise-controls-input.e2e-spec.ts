import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import Ajv, { ValidateFunction } from 'ajv';
import type { Response } from 'supertest';
import type Test from 'supertest/lib/test';
import { ApiKeysService, Role } from '../../src/modules/auth';
import { encodeCursor } from '../../src/platform/http/cursor';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { expectInvalid as expectInvalidField, expectStatus, expectV0Error, messageFor } from '../utils/v0-errors';
import { startTestApp, TestApp } from '../utils/test-app';

/**
 * The enterprise controls API's bad input, limits, preconditions and roles, over real HTTP
 * against the real application. Every refused change is checked to have left the controls as
 * they were: same revision, same settings.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;
type Org = { id: string; slug: string };
type Headers = Record<string, string>;

const CONTROLS = '/api/v0/organization/enterprise-controls';
const HISTORY = `${CONTROLS}/history`;
const POLICY = '/api/v0/agent/policy';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Small enough to send a bigger body quickly, big enough for a snapshot over 1 MiB. */
const BODY_LIMIT = 4 * 1024 * 1024;
const SNAPSHOT_LIMIT = 1024 * 1024;

const KEY = 'sk-live-Zq81x0vN4s7T2b9K-LEAK';
const MASK = `****${KEY.slice(-4)}`;
const MODEL = { id: 'custom:m1', model: 'vendor-model-1', baseUrl: 'https://llm.example.com/v1' };
const SHA40 = 'a'.repeat(40);
const MARKETPLACE = { source: 'github', repo: 'acme/plugins', ref: 'main', sha: SHA40 };

/** `{a: {b: {c: value}}}` for `'a.b.c'`. */
function nest(path: string, value: unknown): Json {
  return path
    .split('.')
    .reverse()
    .reduce<unknown>((inner, key) => ({ [key]: inner }), value) as Json;
}

const strings = (count: number, prefix = 'cmd', length?: number) =>
  Array.from({ length: count }, (_, i) => (length ? `${prefix}-${i}-`.padEnd(length, 'x') : `${prefix}-${i}`));

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
  let t: TestApp;
  let validate: Record<'controls' | 'history' | 'revision', ValidateFunction>;

  /** An organization that only ever receives refused changes: it stays at revision 0. */
  let inputOrg: Org;
  let owner: TestUser;
  let colleague: TestUser; // a member of inputOrg
  let outsider: TestUser; // owner of another organization

  beforeAll(async () => {
    // Bodies larger than the 1 MiB snapshot, so the snapshot's own limit is what refuses them.
    t = await startTestApp({ BODY_LIMIT_BYTES: String(BODY_LIMIT) });
    const doc = (await t.http().get('/docs-json').expect(200)).body as Json;
    // The app's own published schemas, as a client would use them.
    const ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addFormat('uuid', UUID);
    ajv.addFormat('lowercase-uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    ajv.addFormat('uri', (value: string) => URL.canParse(value));
    ajv.addFormat('http-base-url', (value: string) => /^https?:\/\/[^/?#\s]+[^?#\s]*$/.test(value) && new URL(value).href === value);
    ajv.addFormat('email', /^[^\s@]+@[^\s@]+\.[^\s@]+$/);
    ajv.addFormat('date-time', (value: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value)));
    ajv.addFormat('ip-or-cidr', (value: string) => {
      const [address, prefix, extra] = value.split('/');
      const version = isIP(address);
      return version !== 0 && extra === undefined && (prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128)));
    });
    ajv.addSchema({ ...doc, $id: 'openapi' });
    const ok = (path: string) => `openapi#/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/get/responses/200/content/application~1json/schema`;
    validate = {
      controls: ajv.compile({ $ref: 'openapi#/components/schemas/EnterpriseControls' }),
      history: ajv.compile({ $ref: ok(HISTORY) }),
      revision: ajv.compile({ $ref: ok(`${HISTORY}/{revision}`) }),
    };

    inputOrg = await createOrganization(t);
    owner = await createUser(t, Role.Owner, inputOrg);
    colleague = await createUser(t, Role.Member, inputOrg);
    outsider = await createUser(t, Role.Owner, await createOrganization(t));
  });

  afterAll(() => t.close());

  // --- helpers -------------------------------------------------------------------------------

  const http = () => t.http();

  function expectValid(which: keyof typeof validate, body: unknown) {
    validate[which](body);
    expect(validate[which].errors ?? []).toEqual([]);
  }

  /** The owner of a new organization, at revision 0. */
  async function freshOwner(): Promise<TestUser> {
    return createUser(t, Role.Owner, await createOrganization(t));
  }

  /** GET: 200, valid against the published schema, ETag naming the revision. */
  async function read(user: TestUser): Promise<Json> {
    const res = await http().get(CONTROLS).set(user.auth);
    expectStatus(res, 200);
    expectValid('controls', res.body);
    expect(res.headers.etag).toBe(`"${res.body.revision}"`);
    return res.body as Json;
  }

  const patch = (user: TestUser, settings: unknown, headers: Headers = {}) =>
    http()
      .patch(CONTROLS)
      .set(user.auth)
      .set(headers)
      .send({ settings } as object);

  /** A change that must succeed: 200, valid, ETag naming the revision now in force. */
  async function change(user: TestUser, settings: unknown, headers: Headers = {}): Promise<Json> {
    const res = await patch(user, settings, headers);
    expectStatus(res, 200);
    expectValid('controls', res.body);
    expect(res.headers.etag).toBe(`"${res.body.revision}"`);
    return res.body as Json;
  }

  /**
   * A request that must be refused (4xx, never 5xx) and leave the controls exactly as they
   * were. `reader` reads them before and after (the owner of the organization).
   */
  async function refused(reader: TestUser, request: () => Test | Promise<Response>): Promise<Response> {
    const before = await read(reader);
    const res = await request();
    expect({ status: res.status, body: res.body as unknown }).toMatchObject({ status: expect.any(Number) });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    const after = await read(reader);
    expect({ revision: after.revision, settings: after.settings }).toEqual({ revision: before.revision, settings: before.settings });
    return res;
  }

  /** A refused change of the settings by `user` (the owner of inputOrg unless given). */
  const refusedPatch = (settings: unknown, user: TestUser = owner, headers: Headers = {}) => refused(user, () => patch(user, settings, headers));

  /** 400 validation_failed naming `field` first. */
  const expectInvalid = (res: Response, field: string) => expectInvalidField(res, field, { first: true });

  const fields = (res: Response): string[] => ((res.body.metadata?.errors ?? []) as Array<{ field: string }>).map((e) => e.field);

  /** A raw (already serialized) PATCH body with the given content type. */
  const rawPatch = (user: TestUser, body: string | Buffer, contentType = 'application/json') =>
    http().patch(CONTROLS).set(user.auth).set('content-type', contentType).send(body);

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
      const res = await refused(owner, () => http().patch(CONTROLS).set(owner.auth).send({ settings: { cloudSessionSync: false }, revision: 0 }));
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
      ['settings.mcpAutonomyUrlOverrides[0].level', { mcpAutonomyUrlOverrides: [{ urlPattern: 'https://mcp.example.com/*', level: 'high' }] }],
      ['settings.strictKnownMarketplaces[0].url', { strictKnownMarketplaces: [{ ...MARKETPLACE, url: 'x' }] }],
      ['settings.extraKnownMarketplaces.acme.sha', { extraKnownMarketplaces: { acme: { source: 'github', repo: 'acme/p', sha: SHA40 } } }],
      ['settings.serviceRouterRules[0].model', { serviceRouterRules: [{ guidance: 'g', when: 'w', model: 'm' }] }],
    ])('%s: 400 "is not an accepted field"', async (field, settings) => {
      const res = await refusedPatch(settings);
      expectInvalid(res, field);
      expect(messageFor(res, field)).toBe('is not an accepted field');
    });

    it('a userModelPolicies entry with an unknown field: 400 at the entry\'s field', async () => {
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

  // --- body shape and transport ----------------------------------------------------------------

  describe('body shape', () => {
    it('settings missing: 400 settings is required', async () => {
      const res = await refused(owner, () => http().patch(CONTROLS).set(owner.auth).send({}));
      expectInvalid(res, 'settings');
      expect(messageFor(res, 'settings')).toBe('is required');
    });

    it.each([
      ['null', null],
      ['an array', [{ cloudSessionSync: false }]],
      ['a string', '{"cloudSessionSync":false}'],
      ['a number', 1],
      ['a boolean', true],
    ])('settings that is %s: 400 naming settings', async (_, settings) => {
      expectInvalid(await refusedPatch(settings), 'settings');
    });

    it.each([
      ['an array', '[]'],
      ['an array of the body', '[{"settings":{}}]'],
      ['a string', '"settings"'],
      ['a number', '42'],
      ['null', 'null'],
    ])('a body that is %s: 400 validation_failed', async (_, raw) => {
      const res = await refused(owner, () => rawPatch(owner, raw));
      expectV0Error(res, 400, 'validation_failed');
      expect(res.body.detail).toMatch(/^body: /);
    });

    it('no body at all: 400', async () => {
      const res = await refused(owner, () => http().patch(CONTROLS).set(owner.auth));
      expectV0Error(res, 400, 'validation_failed');
    });

    it('an empty body declared as JSON: 400', async () => {
      const res = await refused(owner, () => rawPatch(owner, ''));
      expectStatus(res, 400);
      expect(['invalid_json', 'validation_failed']).toContain(res.body.metadata?.code);
      expectV0Error(res, 400, res.body.metadata.code as string);
    });

    it.each([
      ['application/json', '{"settings": {"cloudSessionSync": false'],
      ['application/json', '{"settings": {cloudSessionSync: false}}'],
      ['application/json', "{'settings': {}}"],
      ['application/merge-patch+json', '{"settings": '],
    ])('invalid JSON (%s): 400 invalid_json', async (contentType, raw) => {
      expectV0Error(await refused(owner, () => rawPatch(owner, raw, contentType)), 400, 'invalid_json');
    });

    it.each([['application/json'], ['application/merge-patch+json']])('a prototype-polluting key (%s): 400 invalid_json', async (contentType) => {
      const res = await refused(owner, () => rawPatch(owner, '{"settings": {"__proto__": {"restrictMemberVisibility": true}}}', contentType));
      expectV0Error(res, 400, 'invalid_json');
    });

    it.each([['text/plain'], ['application/x-www-form-urlencoded'], ['application/xml']])('content type %s: 415 unsupported_media_type', async (contentType) => {
      const body = contentType === 'application/x-www-form-urlencoded' ? 'settings=1' : '{"settings": {"restrictMemberVisibility": true}}';
      expectV0Error(await refused(owner, () => rawPatch(owner, body, contentType)), 415, 'unsupported_media_type');
    });

    it('application/merge-patch+json (with a charset) is accepted as JSON', async () => {
      const user = await freshOwner();
      const res = await rawPatch(user, JSON.stringify({ settings: { restrictMemberVisibility: true } }), 'application/merge-patch+json; charset=utf-8');
      expectStatus(res, 200);
      expect(res.body).toMatchObject({ revision: 1, settings: { restrictMemberVisibility: true } });
    });

    it.each([['application/json'], ['application/merge-patch+json']])('a body over BODY_LIMIT_BYTES (%s): 413 payload_too_large', async (contentType) => {
      const huge = JSON.stringify({ settings: { serviceRouterGuidance: 'x'.repeat(BODY_LIMIT + 10) } });
      const res = await refused(owner, () => rawPatch(owner, huge, contentType));
      expectV0Error(res, 413, 'payload_too_large');
      expect(res.body.metadata.limitBytes).toBe(BODY_LIMIT);
    });

    it('a deeply nested settings value: 400, not a crash', async () => {
      const depth = 50_000;
      const raw = `{"settings":{"extraKnownMarketplaces":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}}`;
      const res = await refused(owner, () => rawPatch(owner, raw));
      expectStatus(res, 400);
      expect(res.body).toMatchObject({ status: 400, metadata: { code: 'json_too_deep', maxDepth: 64 } });
    });


    it('a custom model\'s extraArgs nested deeper than 64 levels (3000 here, 15 kB): 400 naming the limit, never a 500', async () => {
      const user = await freshOwner();
      const depth = 3000;
      const raw = `{"settings":{"customModels":[{"id":"m","model":"m","baseUrl":"https://llm.example.com","extraArgs":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}]}}`;
      const res = await rawPatch(user, raw);
      expectV0Error(res, 400, 'json_too_deep');
      expect(res.body.detail).toMatch(/64 levels/);
      expect((await read(user)).revision).toBe(0);
      expectStatus(await http().get(POLICY).set(user.auth), 200);
    });

    it('an empty merge patch changes nothing and creates no revision', async () => {
      const user = await freshOwner();
      await change(user, { restrictMemberVisibility: true });
      const res = await change(user, {});
      expect(res.revision).toBe(1);
      const history = await http().get(HISTORY).set(user.auth);
      expect(history.body.changes).toHaveLength(1);
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

  // --- limits ------------------------------------------------------------------------------------

  describe('limits', () => {
    const emails = (count: number) => Array.from({ length: count }, (_, i) => `user${i}@example.com`);
    const ips = (count: number) => Array.from({ length: count }, (_, i) => `10.${Math.floor(i / 250)}.${i % 250}.1`);
    const domains = (count: number) => Array.from({ length: count }, (_, i) => `host${i}.example.com`);

    it.each([
      ['commandAllowlist', (n: number) => strings(n)],
      ['commandDenylist', (n: number) => strings(n)],
      ['commandBlocklist', (n: number) => strings(n)],
      ['managedComputersAllowedEmails', emails],
      ['byomComputersAllowedEmails', emails],
      ['networkPolicy.allowedIps', ips],
      ['mcpPolicy.allowlist', (n: number) => strings(n, 'mcp')],
      ['modelPolicy.allowedModelIds', (n: number) => strings(n, 'model')],
      ['sandbox.filesystem.allowRead', (n: number) => strings(n, '/srv/path')],
      ['sandbox.network.allowedDomains', domains],
    ] as const)('settings.%s: 1000 entries accepted, 1001 refused', async (path, make) => {
      const user = await freshOwner();
      const res = await refusedPatch(nest(path, make(1001)), user);
      expectInvalid(res, `settings.${path}`);
      expect(messageFor(res, `settings.${path}`)).toContain('1000');
      const accepted = await change(user, nest(path, make(1000)));
      expect(path.split('.').reduce<unknown>((node, key) => (node as Json)[key], accepted.settings)).toHaveLength(1000);
    });

    it('customModels: 100 accepted, 101 refused', async () => {
      const user = await freshOwner();
      const models = (n: number) => Array.from({ length: n }, (_, i) => ({ ...MODEL, id: `custom:m${i}`, index: i }));
      expectInvalid(await refusedPatch({ customModels: models(101) }, user), 'settings.customModels');
      expect((await change(user, { customModels: models(100) })).settings.customModels).toHaveLength(100);
    });

    it('serviceRouterRules: 100 accepted, 101 refused', async () => {
      const user = await freshOwner();
      const rules = (n: number) => Array.from({ length: n }, (_, i) => ({ guidance: `g${i}`, when: `w${i}` }));
      expectInvalid(await refusedPatch({ serviceRouterRules: rules(101) }, user), 'settings.serviceRouterRules');
      expect((await change(user, { serviceRouterRules: rules(100) })).settings.serviceRouterRules).toHaveLength(100);
    });

    it.each([
      ['enabledPlugins', (i: number) => [`plugin${i}@market`, i % 2 === 0]],
      ['mcpAutonomyOverrides', (i: number) => [`server-${i}`, 'low']],
    ] as const)('map settings.%s: 500 entries accepted, 501 refused', async (field, entry) => {
      const user = await freshOwner();
      const map = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => entry(i)));
      const res = await refusedPatch({ [field]: map(501) }, user);
      expectInvalid(res, `settings.${field}`);
      expect(messageFor(res, `settings.${field}`)).toContain('500');
      expect(Object.keys((await change(user, { [field]: map(500) })).settings[field])).toHaveLength(500);
    });

    it('a merge patch that grows a map past 500 entries is refused', async () => {
      const user = await freshOwner();
      const map = (from: number, n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`plugin${from + i}@market`, true]));
      await change(user, { enabledPlugins: map(0, 300) });
      expectInvalid(await refusedPatch({ enabledPlugins: map(300, 201) }, user), 'settings.enabledPlugins');
      expect(Object.keys((await change(user, { enabledPlugins: map(300, 200) })).settings.enabledPlugins)).toHaveLength(500);
    });

    it.each([
      ['commandAllowlist[0]', (s: string) => ({ commandAllowlist: [s] })],
      ['sandbox.filesystem.denyWrite[0]', (s: string) => ({ sandbox: { filesystem: { denyWrite: [s] } } })],
      ['mcpAutonomyUrlOverrides[0].urlPattern', (s: string) => ({ mcpAutonomyUrlOverrides: [{ urlPattern: s }] })],
      ['strictKnownMarketplaces[0].repo', (s: string) => ({ strictKnownMarketplaces: [{ ...MARKETPLACE, repo: s }] })],
      ['customModels[0].cloudModelConfig.cloudProfile', (s: string) => ({ customModels: [{ ...MODEL, cloudModelConfig: { cloudProfile: s } }] })],
    ] as const)('settings.%s: 2048 characters accepted, 2049 refused', async (path, settings) => {
      const user = await freshOwner();
      const res = await refusedPatch(settings('y'.repeat(2049)), user);
      expectInvalid(res, `settings.${path}`);
      expect(messageFor(res, `settings.${path}`)).toContain('2048');
      await change(user, settings('y'.repeat(2048)));
    });

    it('a string limit counts characters, not UTF-16 units: 2048 emoji accepted', async () => {
      const user = await freshOwner();
      const res = await change(user, { commandAllowlist: ['😀'.repeat(2048)] });
      expect(res.settings.commandAllowlist[0]).toBe('😀'.repeat(2048));
    });

    it.each([
      ['serviceRouterGuidance', (s: string) => ({ serviceRouterGuidance: s })],
      ['serviceRouterRules[0].guidance', (s: string) => ({ serviceRouterRules: [{ guidance: s, when: 'always' }] })],
    ] as const)('settings.%s: 16384 characters accepted, 16385 refused', async (path, settings) => {
      const user = await freshOwner();
      expectInvalid(await refusedPatch(settings('g'.repeat(16_385)), user), `settings.${path}`);
      await change(user, settings('g'.repeat(16_384)));
    });

    it('serviceRouterGuidance may span lines and be empty', async () => {
      const user = await freshOwner();
      expect((await change(user, { serviceRouterGuidance: 'first\nsecond\ttabbed' })).settings.serviceRouterGuidance).toBe('first\nsecond\ttabbed');
      expect((await change(user, { serviceRouterGuidance: '' })).settings.serviceRouterGuidance).toBe('');
    });

    it.each([[0], [-1], [36_501], [1.5], ['30'], [true], [[30]]])('sessionRetentionDays %j: 400 naming it', async (days) => {
      expectInvalid(await refusedPatch({ sessionRetentionDays: days }), 'settings.sessionRetentionDays');
    });

    it.each([[1], [36_500]])('sessionRetentionDays %j: accepted', async (days) => {
      const user = await freshOwner();
      expect((await change(user, { sessionRetentionDays: days })).settings.sessionRetentionDays).toBe(days);
    });

    it.each([
      ['a line feed', 'ls\n'],
      ['a leading tab', '\tls'],
      ['a carriage return', 'git status\r'],
      ['an escape sequence', 'echo \u001b[31m'],
      ['DEL', 'ls\u007f'],
      ['a C1 control', 'ls\u0085'],
      ['a NUL', 'ls\u0000 -la'],
      ['only spaces', '   '],
      ['nothing', ''],
    ])('a command with %s: 400 at its index', async (_, command) => {
      expectInvalid(await refusedPatch({ commandBlocklist: ['rm -rf /', command] }), 'settings.commandBlocklist[1]');
    });

    it.each([
      ['serviceRouterGuidance', { serviceRouterGuidance: 'route\u0000this' }],
      ['customModels[0].extraArgs.stop', { customModels: [{ ...MODEL, extraArgs: { stop: 'end\u0000' } }] }],
      ['customModels[0].apiKey', { customModels: [{ ...MODEL, apiKey: 'sk-\u0000-key-123456' }] }],
      ['serviceRouterGuidance', { serviceRouterGuidance: 'unpaired \ud800 surrogate' }],
    ])('a NUL character or unpaired surrogate in settings.%s: 400 naming it', async (path, settings) => {
      expectInvalid(await refusedPatch(settings), `settings.${path}`);
    });

    it('a NUL character in a map key: 400', async () => {
      const res = await refusedPatch({ enabledPlugins: { 'bad\u0000@market': true } });
      expectV0Error(res, 400, 'validation_failed');
      expect(fields(res)[0]).toMatch(/^settings\.enabledPlugins/);
    });

    it('a map key that is empty or longer than 256 characters: 400', async () => {
      for (const key of ['', 'k'.repeat(257)]) {
        const res = await refusedPatch({ mcpAutonomyOverrides: { [key]: 'low' } });
        expectV0Error(res, 400, 'validation_failed');
        expect(fields(res)[0]).toMatch(/^settings\.mcpAutonomyOverrides/);
      }
    });

    describe('the whole snapshot: at most 1 MiB as JSON', () => {
      const big = (n: number, prefix: string) => strings(n, prefix, 2048);

      it('lists each within their limits but over 1 MiB together: 400 naming settings, with the limit', async () => {
        const user = await freshOwner();
        const res = await refusedPatch({ commandAllowlist: big(300, 'allow'), commandDenylist: big(300, 'deny') }, user);
        expectInvalid(res, 'settings');
        expect(messageFor(res, 'settings')).toContain(String(SNAPSHOT_LIMIT));
      });

      it('a single list of 1000 strings of 2048 characters (2 MB): 400 naming settings', async () => {
        expectInvalid(await refusedPatch({ commandAllowlist: big(1000, 'allow') }), 'settings');
      });

      it('just under 1 MiB is accepted; a later change that takes it over is refused', async () => {
        const user = await freshOwner();
        const first = await change(user, { commandAllowlist: big(250, 'allow'), commandDenylist: big(250, 'deny') });
        expect(Buffer.byteLength(JSON.stringify(first.settings))).toBeLessThan(SNAPSHOT_LIMIT);
        expectInvalid(await refusedPatch({ sandbox: { filesystem: { allowRead: big(20, '/read') } } }, user), 'settings');
        // A change that shrinks it is fine.
        await change(user, { commandDenylist: [] });
      });
    });
  });

  // --- formats -----------------------------------------------------------------------------------

  describe('formats', () => {
    it.each([['not-an-email'], ['a@b'], ['a b@example.com'], ['@example.com'], ['user@'], ['two@@example.com']])(
      'an allowed email %j: 400 at its index',
      async (email) => {
        expectInvalid(await refusedPatch({ managedComputersAllowedEmails: ['ok@example.com', email] }), 'settings.managedComputersAllowedEmails[1]');
        expectInvalid(await refusedPatch({ byomComputersAllowedEmails: [email] }), 'settings.byomComputersAllowedEmails[0]');
      },
    );

    it.each([['10.0.0.0/33'], ['999.1.1.1'], ['abc'], ['10.0.0.0/8/8'], ['10.0.0.0/'], ['::1/129'], ['10.0.0'], [''], [' 10.0.0.1']])(
      'allowedIps %j: 400 at its index',
      async (ip) => {
        const res = await refusedPatch({ networkPolicy: { allowedIps: ['10.0.0.0/8', ip] } });
        expectInvalid(res, 'settings.networkPolicy.allowedIps[1]');
      },
    );

    it('allowedIps accepts IPv4 and IPv6 addresses and CIDR blocks', async () => {
      const user = await freshOwner();
      const allowedIps = ['10.0.0.0/8', '2001:db8::/32', '192.168.1.1', '::1', '0.0.0.0/0', 'fe80::1'];
      expect((await change(user, { networkPolicy: { allowedIps } })).settings.networkPolicy.allowedIps).toEqual(allowedIps);
    });

    it.each([['not-a-uuid'], ['12345'], [randomUUID().replace(/-/g, '')], [`{${randomUUID()}}`]])('missionPolicy.allowedUserIds %j: 400 at its index', async (id) => {
      expectInvalid(await refusedPatch({ missionPolicy: { allowedUserIds: [id] } }), 'settings.missionPolicy.allowedUserIds[0]');
    });

    it.each([['abc'], ['A'.repeat(40)], ['a'.repeat(39)], ['a'.repeat(41)], ['a'.repeat(63)], ['g'.repeat(40)], [`${SHA40}\n`]])(
      'strictKnownMarketplaces[].sha %j: 400 naming it',
      async (sha) => {
        expectInvalid(await refusedPatch({ strictKnownMarketplaces: [{ ...MARKETPLACE, sha }] }), 'settings.strictKnownMarketplaces[0].sha');
      },
    );

    it('strictKnownMarketplaces[].sha of 40 or 64 hexadecimal digits: accepted', async () => {
      const user = await freshOwner();
      const markets = [MARKETPLACE, { ...MARKETPLACE, repo: 'acme/other', sha: '0123456789abcdef'.repeat(4) }];
      expect((await change(user, { strictKnownMarketplaces: markets })).settings.strictKnownMarketplaces).toEqual(markets);
    });

    it.each([['svn'], ['GitHub'], [''], ['https://github.com']])('a marketplace source %j: 400 naming it', async (source) => {
      expectInvalid(await refusedPatch({ strictKnownMarketplaces: [{ ...MARKETPLACE, source }] }), 'settings.strictKnownMarketplaces[0].source');
      expectInvalid(await refusedPatch({ extraKnownMarketplaces: { acme: { source, repo: 'acme/p' } } }), 'settings.extraKnownMarketplaces.acme.source');
    });

    it.each([['github'], ['gitlab'], ['bitbucket'], ['git']])('a marketplace source %j: accepted', async (source) => {
      const user = await freshOwner();
      const res = await change(user, { strictKnownMarketplaces: [{ ...MARKETPLACE, source }], extraKnownMarketplaces: { acme: { source, repo: 'acme/p' } } });
      expect(res.settings.strictKnownMarketplaces[0].source).toBe(source);
    });

    it.each([['ftp://x'], ['llm.example.com'], ['javascript:alert(1)'], ['//llm.example.com']])('modelPolicy.allowedBaseUrls %j: 400 at its index', async (url) => {
      expectInvalid(await refusedPatch({ modelPolicy: { allowedBaseUrls: ['https://ok.example.com', url] } }), 'settings.modelPolicy.allowedBaseUrls[1]');
    });

    it('modelPolicy.allowedBaseUrls with http and https URLs: accepted, stored normalized', async () => {
      const user = await freshOwner();
      const allowedBaseUrls = ['https://llm.example.com/v1', 'HTTP://10.0.0.5:8000'];
      expect((await change(user, { modelPolicy: { allowedBaseUrls } })).settings.modelPolicy.allowedBaseUrls).toEqual(['https://llm.example.com/v1', 'http://10.0.0.5:8000/']);
    });

    // The sandbox runtime refuses single labels and wildcards over a top-level domain: refused here, not at every command.
    it.each([['http://example.com'], ['example.com/path'], ['*'], ['a..b'], ['exa mple.com'], ['intranet'], ['*.com'], ['example.com:0'], ['example.com:65536'], ['example.com:080']])('sandbox.network.allowedDomains %j: 400 at its index', async (domain) => {
      expectInvalid(await refusedPatch({ sandbox: { network: { allowedDomains: [domain] } } }), 'settings.sandbox.network.allowedDomains[0]');
    });

    it('sandbox.network.allowedDomains with a wildcard subdomain: accepted', async () => {
      const user = await freshOwner();
      const allowedDomains = ['*.example.com', 'registry.npmjs.org', 'localhost', 'api.example.com:443', 'localhost:65535'];
      expect((await change(user, { sandbox: { network: { allowedDomains } } })).settings.sandbox.network.allowedDomains).toEqual(allowedDomains);
    });
  });

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

    it('a masked apiKey that is not the stored key\'s mask: 400 at the apiKey', async () => {
      const user = await withKey();
      for (const wrong of ['****abcd', '****']) {
        const res = watch(await refusedPatch({ customModels: [{ ...MODEL, apiKey: wrong }] }, user));
        expectInvalid(res, 'settings.customModels[0].apiKey');
        expect(messageFor(res, 'settings.customModels[0].apiKey')).toMatch(/not the stored value's mask/);
      }
    });

    it('the stored key\'s mask under another model id: 400 (a mask stands only for its own model\'s key)', async () => {
      const user = await withKey();
      const res = watch(await refusedPatch({ customModels: [{ ...MODEL, id: 'custom:renamed', apiKey: MASK }] }, user));
      expectInvalid(res, 'settings.customModels[0].apiKey');
    });

    it('the stored key\'s mask sent back keeps the key and, changing nothing else, creates no revision', async () => {
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
      ['with a duplicate id', { customModels: [{ ...MODEL, apiKey: KEY }, { ...MODEL, apiKey: `${KEY}-2` }] }],
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
      const inserted = await change(user, { customModels: [{ ...first, apiKey: newKey }, { ...MODEL, apiKey: MASK }] });
      expect(inserted.settings.customModels.map((m: Json) => m.apiKey)).toEqual(['****NEW1', MASK]);
      // The shifted model's key replaced.
      const replaced = await change(user, { customModels: [{ ...first, apiKey: '****NEW1' }, { ...MODEL, apiKey: replacement }] });
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

    it('reordering models with their masks keeps each model\'s own key', async () => {
      const user = await freshOwner();
      const other = { ...MODEL, id: 'custom:m2', model: 'vendor-model-2' };
      const otherKey = 'sk-live-0000000000000000-OTHR';
      const set = watch(await patch(user, { customModels: [{ ...MODEL, apiKey: KEY }, { ...other, apiKey: otherKey }] }));
      expectStatus(set, 200);
      expect(set.text).not.toContain(otherKey);
      const swapped = await change(user, { customModels: [{ ...other, apiKey: '****OTHR' }, { ...MODEL, apiKey: MASK }] });
      expect(swapped.revision).toBe(2);
      expect(swapped.settings.customModels.map((m: Json) => [m.id, m.apiKey])).toEqual([
        ['custom:m2', '****OTHR'],
        ['custom:m1', MASK],
      ]);
      const again = await change(user, { customModels: [{ ...other, apiKey: '****OTHR' }, { ...MODEL, apiKey: MASK }] });
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

  // --- If-Match ----------------------------------------------------------------------------------

  describe('If-Match', () => {
    it.each([['abc'], ['"3'], ['W/'], ['3"'], ['""'], ['"1", abc'], ['"-1"'], ['"1.0"'], ['W/"x"'], ['"12345678901"']])(
      'a malformed If-Match %j: 400 naming If-Match',
      async (ifMatch) => {
        const res = await refusedPatch({ restrictMemberVisibility: true }, owner, { 'If-Match': ifMatch });
        expectInvalid(res, 'If-Match');
      },
    );

    it('a stale ETag after a change: 412 revision_mismatch with the current revision', async () => {
      const user = await freshOwner();
      await change(user, { restrictMemberVisibility: true });
      const res = await refusedPatch({ disableAutoUpdate: true }, user, { 'If-Match': '"0"' });
      expectV0Error(res, 412, 'revision_mismatch');
      expect(res.body.metadata.currentRevision).toBe(1);
    });

    it('a stale ETag is 412 even for a change that alters nothing', async () => {
      const user = await freshOwner();
      await change(user, { restrictMemberVisibility: true });
      expectV0Error(await refusedPatch({}, user, { 'If-Match': '"0"' }), 412, 'revision_mismatch');
    });

    it('an ETag of a revision that does not exist yet: 412', async () => {
      const user = await freshOwner();
      expectV0Error(await refusedPatch({ disableAutoUpdate: true }, user, { 'If-Match': '"5"' }), 412, 'revision_mismatch');
    });

    it('a weak tag never matches, even of the current revision: 412', async () => {
      const user = await freshOwner();
      await change(user, { restrictMemberVisibility: true });
      const res = await refusedPatch({ disableAutoUpdate: true }, user, { 'If-Match': 'W/"1"' });
      expectV0Error(res, 412, 'revision_mismatch');
      expect(res.body.metadata.currentRevision).toBe(1);
    });

    it('*, the current ETag, and a list holding it succeed', async () => {
      const user = await freshOwner();
      expect((await change(user, { restrictMemberVisibility: true }, { 'If-Match': '*' })).revision).toBe(1);
      const { headers } = await http().get(CONTROLS).set(user.auth);
      expect((await change(user, { disableAutoUpdate: true }, { 'If-Match': headers.etag as string })).revision).toBe(2);
      expect((await change(user, { wikiCloudSync: false }, { 'If-Match': '"0", "2"' })).revision).toBe(3);
    });

    it('a 412 carries the v0 error body and leaves the history as it was', async () => {
      const user = await freshOwner();
      await change(user, { restrictMemberVisibility: true });
      await change(user, { restrictMemberVisibility: false });
      const res = await refusedPatch({ sandbox: { enabled: true } }, user, { 'If-Match': '"1"' });
      expectV0Error(res, 412, 'revision_mismatch');
      expect(res.body.metadata.currentRevision).toBe(2);
      const history = await http().get(HISTORY).set(user.auth);
      expect(history.body.changes.map((c: Json) => c.revision)).toEqual([2, 1]);
    });
  });

  // --- history and revisions ---------------------------------------------------------------------

  describe('history and revisions', () => {
    /** An owner whose organization has `count` revisions. */
    async function withRevisions(count: number): Promise<TestUser> {
      const user = await freshOwner();
      for (let i = 1; i <= count; i++) await change(user, { sessionRetentionDays: i });
      return user;
    }

    it('an organization without changes has an empty history', async () => {
      const user = await freshOwner();
      const res = await http().get(HISTORY).set(user.auth);
      expectStatus(res, 200);
      expectValid('history', res.body);
      expect(res.body).toEqual({ changes: [], pagination: { hasMore: false, nextCursor: null } });
    });

    it.each([['0'], ['101'], ['abc'], ['1.5'], ['-1'], ['01'], [''], ['1e2'], [' 5']])('limit=%j: 400 naming limit', async (limit) => {
      const res = await http().get(HISTORY).query({ limit }).set(owner.auth);
      expectInvalid(res, 'limit');
    });

    it('limit given twice: 400', async () => {
      const res = await http().get(`${HISTORY}?limit=1&limit=2`).set(owner.auth);
      expectV0Error(res, 400, 'validation_failed');
    });

    it('limit 1 and 100 are accepted; pages walk newest first without repeats', async () => {
      const user = await withRevisions(3);
      expectStatus(await http().get(HISTORY).query({ limit: '100' }).set(user.auth), 200);
      const seen: number[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 5; page++) {
        const res = await http()
          .get(HISTORY)
          .query({ limit: '1', ...(cursor ? { cursor } : {}) })
          .set(user.auth);
        expectStatus(res, 200);
        expectValid('history', res.body);
        seen.push(...res.body.changes.map((c: Json) => c.revision));
        if (!res.body.pagination.hasMore) {
          expect(res.body.pagination.nextCursor).toBeNull();
          break;
        }
        cursor = res.body.pagination.nextCursor as string;
      }
      expect(seen).toEqual([3, 2, 1]);
    });

    it('a tampered cursor: 400 invalid_cursor', async () => {
      const user = await withRevisions(2);
      const first = await http().get(HISTORY).query({ limit: '1' }).set(user.auth);
      const cursor = first.body.pagination.nextCursor as string;
      const [payload, sum] = cursor.split('.');
      const flipped = (s: string) => `${s.slice(0, -1)}${s.endsWith('A') ? 'B' : 'A'}`;
      for (const bad of [flipped(cursor), `${flipped(payload)}.${sum}`, payload, `${cursor}x`, 'not-a-cursor', '']) {
        const res = await http().get(HISTORY).query({ cursor: bad }).set(user.auth);
        expect({ bad, status: res.status, code: res.body.metadata?.code }).toEqual({ bad, status: 400, code: 'invalid_cursor' });
        expectV0Error(res, 400, 'invalid_cursor');
      }
    });

    it('a cursor from another list: 400 invalid_cursor', async () => {
      const user = await withRevisions(2);
      // A real cursor of the API keys list.
      await t.app.get(ApiKeysService).create({ organizationId: user.organizationId, userId: user.userId, name: 'second' });
      const keys = await http().get('/settings/api-keys').query({ limit: '1' }).set(user.auth);
      expectStatus(keys, 200);
      const keysCursor = keys.body.pagination.nextCursor as string;
      expect(keysCursor).toEqual(expect.any(String));
      const foreign = [
        keysCursor,
        // A messages list's cursor has the same shape (one number) as this list's.
        encodeCursor(`messages:${randomUUID()}`, [2]),
        encodeCursor('sessions', [Date.now(), randomUUID()]),
      ];
      for (const cursor of foreign) {
        expectV0Error(await http().get(HISTORY).query({ cursor }).set(user.auth), 400, 'invalid_cursor');
      }
    });

    it('a well-sealed history cursor with a key of the wrong type: 400 invalid_cursor', async () => {
      const list = 'enterprise-control-history';
      for (const cursor of [encodeCursor(list, ['2']), encodeCursor(list, [1.5]), encodeCursor(list, [1, 2]), encodeCursor(list, [])]) {
        expectV0Error(await http().get(HISTORY).query({ cursor }).set(owner.auth), 400, 'invalid_cursor');
      }
    });

    it.each([['0'], ['abc'], ['-1'], ['99999999999'], ['2147483648'], ['1.0'], ['01'], ['1e0'], ['%20']])('history/%s: 404 revision_not_found', async (revision) => {
      const user = await withRevisions(1);
      expectV0Error(await http().get(`${HISTORY}/${revision}`).set(user.auth), 404, 'revision_not_found');
    });

    it('a revision past the latest: 404', async () => {
      const user = await withRevisions(1);
      expectV0Error(await http().get(`${HISTORY}/2`).set(user.auth), 404, 'revision_not_found');
      expectV0Error(await http().get(`${HISTORY}/2147483647`).set(user.auth), 404, 'revision_not_found');
    });

    it('other organizations\' revisions are never visible', async () => {
      const a = await withRevisions(3);
      const b = await withRevisions(1);
      expectV0Error(await http().get(`${HISTORY}/2`).set(b.auth), 404, 'revision_not_found');
      expectV0Error(await http().get(`${HISTORY}/3`).set(b.auth), 404, 'revision_not_found');
      const own = await http().get(`${HISTORY}/1`).set(b.auth);
      expectStatus(own, 200);
      expectValid('revision', own.body);
      expect(own.body.user.id).toBe(b.userId);
      const list = await http().get(HISTORY).set(b.auth);
      expectValid('history', list.body);
      expect(list.body.changes.map((c: Json) => [c.revision, c.user.id])).toEqual([[1, b.userId]]);
      // A's cursor in B's hands pages only through B's revisions.
      const aPage = await http().get(HISTORY).query({ limit: '1' }).set(a.auth);
      const fromA = await http().get(HISTORY).query({ cursor: aPage.body.pagination.nextCursor }).set(b.auth);
      expectStatus(fromA, 200);
      expect(fromA.body.changes.map((c: Json) => c.user.id)).toEqual([b.userId]);
    });
  });

  // --- roles and credentials ---------------------------------------------------------------------

  describe('roles and credentials', () => {
    let org: Org;
    let orgOwner: TestUser;
    let manager: TestUser;
    let member: TestUser;
    let guest: TestUser;

    beforeAll(async () => {
      org = await createOrganization(t);
      orgOwner = await createUser(t, Role.Owner, org);
      manager = await createUser(t, Role.Manager, org);
      member = await createUser(t, Role.Member, org);
      guest = await createUser(t, Role.Guest, org);
      await change(orgOwner, { restrictMemberVisibility: true });
    });

    const routes = [
      ['GET', () => http().get(CONTROLS)],
      ['PATCH', () => http().patch(CONTROLS).send({ settings: { disableAutoUpdate: true } })],
      ['PATCH (merge-patch+json)', () => http().patch(CONTROLS).set('content-type', 'application/merge-patch+json').send(JSON.stringify({ settings: { disableAutoUpdate: true } }))],
      ['GET history', () => http().get(HISTORY)],
      ['GET history/1', () => http().get(`${HISTORY}/1`)],
    ] as const;

    it.each([['member'], ['guest']])('a %s: 403 insufficient_role on every route, nothing changed', async (role) => {
      const user = role === 'member' ? member : guest;
      for (const [label, request] of routes) {
        const res = await refused(orgOwner, () => request().set(user.auth));
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 403, code: 'insufficient_role' });
        expectV0Error(res, 403, 'insufficient_role');
      }
    });

    it('a member\'s invalid change is still 403, not 400', async () => {
      const res = await refused(orgOwner, () => patch(member, { sandbox: null }));
      expectV0Error(res, 403, 'insufficient_role');
    });

    it.each([
      ['no credentials', {}],
      ['an unknown API key', { Authorization: 'Bearer ap_0000000000000000000000000000000000000000' }],
      ['a malformed Authorization header', { Authorization: 'Basic dXNlcjpwYXNz' }],
    ])('%s: 401 on every route, nothing changed', async (_, headers: Headers) => {
      for (const [label, request] of routes) {
        const res = await refused(orgOwner, () => request().set(headers));
        expect({ label, status: res.status }).toEqual({ label, status: 401 });
        expect(Object.keys(res.body).sort()).toEqual(['detail', 'metadata', 'status', 'title']);
      }
    });

    it('a computer\'s agent token: 403 on every route; it reads the agent policy instead', async () => {
      const created = await http()
        .post('/api/v0/computers')
        .set(orgOwner.auth)
        .send({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
      expectStatus(created, 201);
      const token = { Authorization: `Bearer ${created.body.agentToken as string}` };
      for (const [label, request] of routes) {
        const res = await refused(orgOwner, () => request().set(token));
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 403, code: 'computer_token_not_accepted' });
      }
      const policy = await http().get(POLICY).set(token);
      expectStatus(policy, 200);
      expect(policy.body.revision).toBe((await read(orgOwner)).revision);
    });

    it('a manager reads and changes the controls, and is recorded as the change\'s user', async () => {
      const before = await read(manager);
      const res = await change(manager, { disableAutoUpdate: !before.settings.disableAutoUpdate });
      expect(res.revision).toBe(before.revision + 1);
      expect(res.user.id).toBe(manager.userId);
      const history = await http().get(HISTORY).query({ limit: '1' }).set(manager.auth);
      expectStatus(history, 200);
      expect(history.body.changes[0].user.id).toBe(manager.userId);
    });

    it('an owner of another organization changes only their own', async () => {
      const before = await read(orgOwner);
      const other = await freshOwner();
      await change(other, { disableAutoUpdate: true });
      expect(await read(orgOwner)).toEqual(before);
    });
  });
});

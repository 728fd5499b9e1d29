import { randomUUID } from 'node:crypto';
import { TestUser } from '../utils/factories';
import { expectStatus, expectV0Error, messageFor } from '../utils/v0-errors';
import {
  BODY_LIMIT,
  CONTROLS,
  controlsInputFixture,
  HISTORY,
  Json,
  MARKETPLACE,
  MODEL,
  nest,
  POLICY,
  SHA40,
  strings,
} from '../utils/fixtures/enterprise-controls-input';

/** The enterprise controls API's body shape, limits and formats: refused changes leave the controls as they were. */

const SNAPSHOT_LIMIT = 1024 * 1024;

describe('Enterprise controls API (v0): input, limits, preconditions and roles', () => {
  const fixture = controlsInputFixture();
  const { http, freshOwner, read, change, refused, refusedPatch, expectInvalid, fields, rawPatch } = fixture;
  let owner: TestUser;
  beforeAll(() => ({ owner } = fixture));

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

    it.each([['text/plain'], ['application/x-www-form-urlencoded'], ['application/xml']])(
      'content type %s: 415 unsupported_media_type',
      async (contentType) => {
        const body = contentType === 'application/x-www-form-urlencoded' ? 'settings=1' : '{"settings": {"restrictMemberVisibility": true}}';
        expectV0Error(await refused(owner, () => rawPatch(owner, body, contentType)), 415, 'unsupported_media_type');
      },
    );

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

    it("a custom model's extraArgs nested deeper than 64 levels (3000 here, 15 kB): 400 naming the limit, never a 500", async () => {
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

    it.each([['not-a-uuid'], ['12345'], [randomUUID().replace(/-/g, '')], [`{${randomUUID()}}`]])(
      'missionPolicy.allowedUserIds %j: 400 at its index',
      async (id) => {
        expectInvalid(await refusedPatch({ missionPolicy: { allowedUserIds: [id] } }), 'settings.missionPolicy.allowedUserIds[0]');
      },
    );

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

    it.each([['ftp://x'], ['llm.example.com'], ['javascript:alert(1)'], ['//llm.example.com']])(
      'modelPolicy.allowedBaseUrls %j: 400 at its index',
      async (url) => {
        expectInvalid(await refusedPatch({ modelPolicy: { allowedBaseUrls: ['https://ok.example.com', url] } }), 'settings.modelPolicy.allowedBaseUrls[1]');
      },
    );

    it('modelPolicy.allowedBaseUrls with http and https URLs: accepted, stored normalized', async () => {
      const user = await freshOwner();
      const allowedBaseUrls = ['https://llm.example.com/v1', 'HTTP://10.0.0.5:8000'];
      expect((await change(user, { modelPolicy: { allowedBaseUrls } })).settings.modelPolicy.allowedBaseUrls).toEqual([
        'https://llm.example.com/v1',
        'http://10.0.0.5:8000/',
      ]);
    });

    // The sandbox runtime refuses single labels and wildcards over a top-level domain: refused here, not at every command.
    it.each([
      ['http://example.com'],
      ['example.com/path'],
      ['*'],
      ['a..b'],
      ['exa mple.com'],
      ['intranet'],
      ['*.com'],
      ['example.com:0'],
      ['example.com:65536'],
      ['example.com:080'],
    ])('sandbox.network.allowedDomains %j: 400 at its index', async (domain) => {
      expectInvalid(await refusedPatch({ sandbox: { network: { allowedDomains: [domain] } } }), 'settings.sandbox.network.allowedDomains[0]');
    });

    it('sandbox.network.allowedDomains with a wildcard subdomain: accepted', async () => {
      const user = await freshOwner();
      const allowedDomains = ['*.example.com', 'registry.npmjs.org', 'localhost', 'api.example.com:443', 'localhost:65535'];
      expect((await change(user, { sandbox: { network: { allowedDomains } } })).settings.sandbox.network.allowedDomains).toEqual(allowedDomains);
    });
  });
});

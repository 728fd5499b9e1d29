import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { expectStatus } from '../utils/v0-errors';
import { startTestApp, TestApp } from '../utils/test-app';

/**
 * Every URL the API stores, over real HTTP against the real application: a table of bad values
 * (each a 400 naming the field, nothing stored), good values stored normalized, then a seeded fuzz
 * pass. The oracle here is independent of the server's checker: a stored URL must re-parse to
 * itself, use an allowed scheme, name a host, and hold no whitespace, control or HTML characters.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;

const CONTROLS = '/api/v0/organization/enterprise-controls';
const REPORTS = '/api/organization/maturity-level-reports';
const COMPUTERS = '/api/v0/computers';
/** Steps never run (PROVISIONING_CONCURRENCY 0): quotas large enough for the fuzz pass. */
const ROOMY_QUOTAS = { COMPUTERS_PER_ORGANIZATION: '100000', PROVISIONING_PER_ORGANIZATION: '100000', LOCAL_AGENTS_PER_ORGANIZATION: '100000' };
const MAX = 2048;

/** What no stored URL may hold: whitespace, control, invisible or unpaired-surrogate characters, or raw HTML-ish ones. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const FORBIDDEN = /[\s\u0000-\u001f\u007f-\u009f\p{Cf}\p{Cs}\p{Z}<>"'{}|\\^`]/u;

/** One stored URL field: how to send a value, where the error must point, how to read back what was stored. */
interface UrlField {
  name: string;
  /** The `metadata.errors[].field` a refusal must name. */
  field: string;
  schemes: string[];
  /** Sends `value`; answers the response and a function reading the stored value back (when accepted). */
  send(value: string): Promise<{ res: Response; stored: () => Promise<string | undefined> }>;
  /** How many values are stored in this field's owner right now, to show a refusal stored nothing. */
  count(): Promise<number>;
}

/** 400 whose `metadata.errors` name `field` (v0 and the readiness routes share that part of the error body). */
function expectInvalid(res: Response, field: string): void {
  expectStatus(res, 400);
  expect(res.body.metadata.errors).toEqual(expect.arrayContaining([{ field, message: expect.any(String) }]));
}

/** A small seeded generator (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const SCHEMES = ['https', 'https', 'http', 'HTTPS', 'HtTp', 'ssh', 'git', 'file', 'javascript', 'data', 'ftp', 'ws', 'mailto', '', 'h ttp', 'http\t'];
const SEPARATORS = ['://', '://', '://', '://', '://', ':', ':/', ':///', ':\\\\', ':\\/', '//', ' ://', '', ':////'];
const USERINFO = ['', '', '', '', '', '', '', 'user@', 'user:pw@', ':pw@', '@', 'git@', 'a b@', 'trusted.example@', '-o@'];
const HOSTS = [
  'example.com',
  'example.com',
  'EXAMPLE.com',
  'llm.example.com',
  'llm.example.com',
  'bücher.example',
  '127.0.0.1',
  '0x7f.1',
  '[::1]',
  '[::1',
  '',
  '-host',
  'exa mple.com',
  'a..b',
  'xn--bcher-kva.example',
  '%41.example',
  'x\u0000y',
  'localhost',
];
const PORTS = ['', '', '', ':443', ':80', ':8080', ':0', ':65536', ':x', ':'];
const SAFE = ['v1', 'a', 'repo.git', 'acme', 'chat', '%41', 'é', '~x', '-', '_', '.well-known'];
const PIECES = [
  'v1',
  'a',
  'repo.git',
  '..',
  '.',
  '%2e%2e',
  '%2F',
  '%41',
  '%zz',
  '%',
  'é',
  '😀',
  '\ud800',
  ' ',
  '\t',
  '\n',
  '\r',
  '\u0000',
  '\u007f',
  '\u0085',
  '\u00a0',
  '\u2028',
  '\u2029',
  '\u200b',
  '\u202e',
  '\ufeff',
  '\u3000',
  '<script>',
  '>',
  '"',
  "'",
  '`',
  '{',
  '}',
  '|',
  '\\',
  '^',
  '?',
  '#',
  '?q=1',
  '#frag',
  '@',
  ':',
  ';',
  '&',
  '=',
  '+',
  '$',
  ',',
  '!',
  '*',
  '(',
  ')',
  '~',
  '[',
  ']',
];

function fuzzValue(next: () => number): string {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  if (next() < 0.05)
    return pick(['git@github.com:acme/api.git', 'git@github.com:acme/<x>.git', 'github.com:acme/api', '/etc/passwd', './x', 'x'.repeat(MAX + 1)]);
  let path = '';
  const segments = Math.floor(next() * 4);
  for (let i = 0; i < segments; i++) path += `/${Array.from({ length: 1 + Math.floor(next() * 3) }, () => pick(next() < 0.7 ? SAFE : PIECES)).join('')}`;
  // Four in ten start like a good URL, so the accepted side is reached too.
  const sane = next() < 0.4;
  const start = sane
    ? `${pick(['https', 'HTTP', 'ssh', 'git'])}://${pick(HOSTS.slice(0, 5))}`
    : `${pick(SCHEMES)}${pick(SEPARATORS)}${pick(USERINFO)}${pick(HOSTS)}`;
  const value = `${start}${pick(PORTS)}${path}`;
  return next() < 0.1 ? `${pick([' ', '\t', '\n', '\u00a0'])}${value}` : next() < 0.1 ? `${value}${pick([' ', '\t', '\n', '\u2028'])}` : value;
}

describe('URLs the API stores: checked per field, stored normalized', () => {
  let t: TestApp;
  let owner: TestUser;
  const fields: UrlField[] = [];

  beforeAll(async () => {
    t = await startTestApp({ ...ROOMY_QUOTAS, PROVISIONING_CONCURRENCY: '0' });
    owner = await createUser(t, Role.Owner, await createOrganization(t));
    const http = () => t.http();
    const settings = async () => (await http().get(CONTROLS).set(owner.auth).expect(200)).body as Json;
    const controls = (field: string, settingsFor: (value: string) => Json, read: (s: Json) => string | undefined): UrlField => ({
      name: field,
      field,
      schemes: ['http:', 'https:'],
      send: async (value) => ({
        res: await http()
          .patch(CONTROLS)
          .set(owner.auth)
          .send({ settings: settingsFor(value) }),
        stored: async () => read((await settings()).settings),
      }),
      count: async () => (await settings()).revision as number,
    });
    const model = (extra: Json) => ({ customModels: [{ id: 'custom:m', model: 'm', baseUrl: 'https://llm.example.com/v1', ...extra }] });
    fields.push(
      controls(
        'settings.customModels[0].baseUrl',
        (baseUrl) => model({ baseUrl }),
        (s) => s.customModels[0]?.baseUrl,
      ),
      controls(
        'settings.customModels[0].cloudModelConfig.cloudBaseUrl',
        (cloudBaseUrl) => model({ cloudModelConfig: { cloudBaseUrl } }),
        (s) => s.customModels[0]?.cloudModelConfig?.cloudBaseUrl,
      ),
      controls(
        'settings.modelPolicy.allowedBaseUrls[0]',
        (url) => ({ modelPolicy: { allowedBaseUrls: [url] } }),
        (s) => s.modelPolicy.allowedBaseUrls[0],
      ),
      controls(
        `settings.userModelPolicies.${owner.userId}.allowedBaseUrls[0]`,
        (url) => ({ userModelPolicies: { [owner.userId]: { allowedBaseUrls: [url] } } }),
        (s) => s.userModelPolicies[owner.userId]?.allowedBaseUrls?.[0],
      ),
    );
    const reports = async () => (await http().get(REPORTS).set(owner.auth).query({ limit: 1 }).expect(200)).body as Json;
    fields.push({
      name: 'readiness repoUrl',
      field: 'repoUrl',
      schemes: ['https:', 'http:', 'ssh:', 'git:', 'file:'],
      send: async (repoUrl) => {
        const res = await http()
          .post(REPORTS)
          .set(owner.auth)
          .send({ repoUrl, apps: {}, report: { readme: { numerator: 1, denominator: 1, rationale: 'x' } } });
        return {
          res,
          stored: async () => {
            // What the listing shows is what was stored, and what the upload answered.
            const [latest] = (await reports()).reports as Json[];
            expect(latest.reportId).toBe(res.body.reportId);
            expect(latest.repoUrl).toBe(res.body.repoUrl);
            return latest.repoUrl as string;
          },
        };
      },
      count: async () =>
        Number((await t.app.get(DataSource).query('SELECT count(*)::int AS n FROM readiness_reports WHERE organization_id = $1', [owner.organizationId]))[0].n),
    });
    fields.push({
      name: 'computers repos',
      field: 'repos[0]',
      schemes: ['https:', 'http:', 'ssh:', 'git:'],
      send: async (repo) => {
        const res = await http()
          .post(COMPUTERS)
          .set(owner.auth)
          .send({ name: 'box', provider: 'local', repos: [repo] });
        return {
          res,
          stored: async () => ((await t.app.get(DataSource).query('SELECT repos FROM computers WHERE id = $1', [res.body.id]))[0].repos as string[])[0],
        };
      },
      count: async () =>
        Number((await t.app.get(DataSource).query('SELECT count(*)::int AS n FROM computers WHERE organization_id = $1', [owner.organizationId]))[0].n),
    });
  });

  afterAll(() => t.close());

  const field = (name: string) => fields.find((f) => f.name === name || f.field === name)!;
  const EVERY = [
    'settings.customModels[0].baseUrl',
    'settings.customModels[0].cloudModelConfig.cloudBaseUrl',
    'settings.modelPolicy.allowedBaseUrls[0]',
    'user allowedBaseUrls',
    'readiness repoUrl',
    'computers repos',
  ];
  const named = (name: string) => (name === 'user allowedBaseUrls' ? fields.find((f) => f.field.startsWith('settings.userModelPolicies'))! : field(name));

  /** Refused everywhere: what WHATWG parsing would strip, rewrite or encode, and what is no URL of any accepted scheme. */
  const BAD: Array<[string, string]> = [
    ['a space inside', 'https://example.com/a b'],
    ['a space in the host', 'https://exa mple.com/x'],
    ['a leading space', ' https://example.com/x'],
    ['a trailing space', 'https://example.com/x '],
    ['a tab', 'https://example.com/\tx'],
    ['a trailing newline', 'https://example.com/x\n'],
    ['a CR LF inside', 'https://example.com/x\r\nSet-Cookie:a'],
    ['NUL', 'https://example.com/x\u0000'],
    ['DEL', 'https://example.com/x\u007f'],
    ['U+00A0', 'https://example.com/x\u00a0'],
    ['U+2028', 'https://example.com/\u2028x'],
    ['U+3000', '\u3000https://example.com/x'],
    ['a zero-width space', 'https://exam\u200bple.com/x'],
    ['a bidi override', 'https://example.com/\u202etxt.exe'],
    ['a byte-order mark', '\ufeffhttps://example.com/x'],
    ['javascript:', 'javascript:alert(1)'],
    ['javascript: with //', 'javascript://example.com/%0Aalert(1)'],
    ['data:', 'data:text/html,<script>alert(1)</script>'],
    ['ftp:', 'ftp://example.com/x'],
    ['no host (three slashes)', 'http:///example.com/x'],
    ['only a scheme', 'http://'],
    ['no // after the scheme', 'https:example.com/x'],
    ['backslashes', 'http:\\\\evil.example\\x'],
    ['a backslash after //', 'https://example.com\\@evil.example/'],
    ['user and password', 'https://user:secret@example.com/x'],
    ['a token as user', 'https://ghp_token@example.com/x'],
    ['HTML', 'https://example.com/<script>alert(1)</script>'],
    ['a quote', 'https://example.com/x"onmouseover="alert(1)'],
    ['an apostrophe', "https://example.com/x'y"],
    ['braces', 'https://example.com/{x}'],
    ['a backquote', 'https://example.com/`x`'],
    ['a bad percent escape', 'https://example.com/%zz'],
    ['over-long', `https://example.com/${'x'.repeat(MAX)}`],
    ['a relative reference', '//example.com/x'],
    ['a bare host', 'example.com'],
    ['a host starting with -', 'https://-oProxyCommand=x/y'],
    ['an unpaired surrogate', 'https://example.com/\ud800'],
  ];

  describe.each(EVERY)('%s', (name) => {
    it.each(BAD)('%s: 400 naming the field, nothing stored', async (_, value) => {
      const f = named(name);
      const before = await f.count();
      const { res } = await f.send(value);
      // Readiness drops credentials instead (see the next test); every other field refuses them.
      if (f.field === 'repoUrl' && /^https:\/\/[^/]*@/.test(value)) return;
      expectInvalid(res, f.field);
      expect(await f.count()).toBe(before);
    });

    it('a file: URL: refused unless the field takes repositories on disk', async () => {
      const f = named(name);
      const { res, stored } = await f.send('file:///srv/git/app');
      if (f.schemes.includes('file:')) {
        expectStatus(res, 201);
        expect(await stored()).toBe('file:///srv/git/app');
      } else {
        expectInvalid(res, f.field);
      }
    });

    it('a good value is stored normalized, and the answer shows it', async () => {
      const f = named(name);
      for (const [sent, normalized] of [
        ['HTTPS://Example.COM:443/v1/', 'https://example.com/v1/'],
        ['http://LLM.example.com:80/x', 'http://llm.example.com/x'],
        ['https://bücher.example/a/./b/../c', 'https://xn--bcher-kva.example/a/c'],
        ['https://example.com/%7e%41', 'https://example.com/%7e%41'],
      ]) {
        const { res, stored } = await f.send(sent);
        expect(res.status).toBeLessThan(300);
        expect(await stored()).toBe(normalized);
      }
    });
  });

  it('readiness repoUrl: credentials are dropped, never stored or shown', async () => {
    const f = field('repoUrl');
    const { res, stored } = await f.send('https://x-access-token:ghs_secret@GitHub.com/acme/api.git');
    expectStatus(res, 201);
    expect(res.body.repoUrl).toBe('https://github.com/acme/api.git');
    expect(await stored()).toBe('https://github.com/acme/api.git');
  });

  it('readiness repoUrl and computers repos: scp-like addresses are checked too', async () => {
    const repo = field('repoUrl');
    expectInvalid((await repo.send('git@github.com:acme/<api>.git')).res, 'repoUrl');
    expectInvalid((await repo.send('git@github.com:acme/a pi.git')).res, 'repoUrl');
    const ok = await repo.send('git@GitHub.com:acme/api.git');
    expect(await ok.stored()).toBe('ssh://git@github.com/acme/api.git');
    const computers = field('repos[0]');
    expectInvalid((await computers.send('git@github.com:acme/<api>.git')).res, 'repos[0]');
    const kept = await computers.send('git@github.com:acme/api.git');
    expect(await kept.stored()).toBe('git@github.com:acme/api.git');
  });

  it('allowedBaseUrls are matched on normalized forms, by whole path segments', async () => {
    const user = await createUser(t, Role.Owner, await createOrganization(t));
    const patch = (settings: Json) => t.http().patch(CONTROLS).set(user.auth).send({ settings }).expect(200);
    const session = (model: string) => t.http().post('/api/v0/sessions').set(user.auth).send({ sessionSettings: { model } });
    await patch({
      customModels: [
        { id: 'under', model: 'm', baseUrl: 'HTTPS://LLM.example.com:443/v1/chat' },
        { id: 'sibling', model: 'm', baseUrl: 'https://llm.example.com/v10' },
        { id: 'other-port', model: 'm', baseUrl: 'https://llm.example.com:8443/v1' },
      ],
      modelPolicy: { allowedBaseUrls: ['https://llm.example.com/v1/'] },
    });
    expect((await session('under')).status).toBeLessThan(300);
    for (const model of ['sibling', 'other-port']) {
      const res = await session(model);
      expect(res.status).toBe(403);
      expect(JSON.stringify(res.body)).toContain('allowedBaseUrls');
    }
  });

  // --- fuzz --------------------------------------------------------------------------------------

  const FUZZ_PER_FIELD = 300;

  it.each(EVERY)('%s: random strings are stored normalized or refused naming the field, never a 500', async (name) => {
    const f = named(name);
    const next = random(0x5eed + EVERY.indexOf(name));
    let accepted = 0;
    for (let i = 0; i < FUZZ_PER_FIELD; i++) {
      const value = fuzzValue(next);
      const { res, stored } = await f.send(value);
      const context = { value, status: res.status, body: res.body as unknown };
      expect({ ...context, ok: [200, 201, 400].includes(res.status) }).toMatchObject({ ok: true });
      if (res.status === 400) {
        const named = [...new Set((res.body.metadata?.errors ?? []).map((e: Json) => e.field))];
        expect({ ...context, named }).toMatchObject({ named: [f.field] });
        continue;
      }
      accepted++;
      const kept = await stored();
      expect(typeof kept).toBe('string');
      // Nothing WHATWG would strip got through, and nothing dangerous is stored.
      expect({ ...context, inputClean: !FORBIDDEN.test(value), storedClean: !FORBIDDEN.test(kept!) }).toMatchObject({ inputClean: true, storedClean: true });
      expect(kept!.length).toBeLessThanOrEqual(MAX);
      if (f.field === 'repos[0]' && !/^[a-z]+:\/\//.test(kept!)) continue; // scp-like addresses are stored as given
      const url = new URL(kept!);
      expect({ kept, href: url.href, scheme: f.schemes.includes(url.protocol), host: url.protocol === 'file:' || url.hostname !== '' }).toMatchObject({
        href: kept,
        scheme: true,
        host: true,
      });
      if (url.protocol === 'http:' || url.protocol === 'https:')
        expect({ kept, user: url.username, password: url.password }).toMatchObject({ user: '', password: '' });
    }
    // The generator must reach both sides, or the pass proves little.
    expect(accepted).toBeGreaterThan(3);
    expect(accepted).toBeLessThan(FUZZ_PER_FIELD);
  });
});

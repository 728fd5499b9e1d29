import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser } from '../utils/factories';
import { expectStatus } from '../utils/v0-errors';
import { TestApp } from '../utils/test-app';
import { CONTROLS, EVERY, Json, MAX, urlFieldsFixture } from '../utils/fixtures/urls';

/**
 * Every URL the API stores, over real HTTP against the real application: a table of bad values
 * (each a 400 naming the field, nothing stored), and good values stored normalized.
 */

/** 400 whose `metadata.errors` name `field` (v0 and the readiness routes share that part of the error body). */
function expectInvalid(res: Response, field: string): void {
  expectStatus(res, 400);
  expect(res.body.metadata.errors).toEqual(expect.arrayContaining([{ field, message: expect.any(String) }]));
}

describe('URLs the API stores: checked per field, stored normalized', () => {
  const fixture = urlFieldsFixture();
  const { field, named } = fixture;
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

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
});

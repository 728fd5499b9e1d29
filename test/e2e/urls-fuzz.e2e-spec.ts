import { EVERY, Json, MAX, urlFieldsFixture } from '../utils/fixtures/urls';
import { random } from '../utils/seeded-random';

/**
 * Every URL the API stores, over real HTTP against the real application: a seeded fuzz pass. The
 * oracle here is independent of the server's checker: a stored URL must re-parse to itself, use an
 * allowed scheme, name a host, and hold no whitespace, control or HTML characters.
 */

/** What no stored URL may hold: whitespace, control, invisible or unpaired-surrogate characters, or raw HTML-ish ones. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const FORBIDDEN = /[\s\u0000-\u001f\u007f-\u009f\p{Cf}\p{Cs}\p{Z}<>"'{}|\\^`]/u;

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
  const fixture = urlFieldsFixture();
  const { named } = fixture;
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

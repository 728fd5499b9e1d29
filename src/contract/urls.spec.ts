import { checkUrl, HTTP_BASE_URL, UrlRule } from './urls';

const REPO: UrlRule = { schemes: ['https:', 'http:', 'ssh:', 'git:', 'file:'], maxLength: 100, credentials: 'drop', query: true, fragment: true };

describe('checkUrl', () => {
  it.each([
    ['HTTPS://Example.COM:443/v1/', 'https://example.com/v1/'],
    ['http://example.com', 'http://example.com/'],
    ['http://10.0.0.5:8000', 'http://10.0.0.5:8000/'],
    ['https://bücher.example/v1', 'https://xn--bcher-kva.example/v1'],
    ['https://example.com/a/./b/../c', 'https://example.com/a/c'],
    ['https://example.com/%7Euser', 'https://example.com/%7Euser'],
    ['https://[::1]:8443/v1', 'https://[::1]:8443/v1'],
  ])('accepts %j as %j', (raw, href) => {
    expect(checkUrl(raw, HTTP_BASE_URL)).toEqual({ ok: true, href });
  });

  it.each([
    [' https://example.com', 'whitespace'],
    ['https://example.com ', 'whitespace'],
    ['https://exa mple.com', 'whitespace'],
    ['https://example.com/\t', 'whitespace'],
    ['https://example.com/\n', 'whitespace'],
    ['https://example.com/\u0000', 'whitespace'],
    ['https://example.com/\u00a0', 'whitespace'],
    ['https://example.com/\u2028', 'whitespace'],
    ['https://example.com/\u200b', 'whitespace'],
    ['https://example.com/\u202e', 'whitespace'],
    ['https://example.com/\ud800', 'whitespace'],
    ['javascript:alert(1)', 'javascript: is not accepted'],
    ['data:text/html,x', 'data: is not accepted'],
    ['file:///etc/passwd', 'file: is not accepted'],
    ['ftp://example.com/', 'ftp: is not accepted'],
    ['http:///x', 'host'],
    ['http://', 'host'],
    ['http://?x', 'host'],
    ['http:example.com', '//'],
    ['http:\\\\evil.example', '\\'],
    ['https://user:pw@example.com/', 'credentials'],
    ['https://token@example.com/', 'credentials'],
    ['https://example.com/<script>', '<'],
    ['https://example.com/"x"', '"'],
    ["https://example.com/'x'", "'"],
    ['https://example.com/{x}', '{'],
    ['https://example.com/a|b', '|'],
    ['https://example.com/`x`', '`'],
    ['https://example.com/%zz', '%'],
    ['https://example.com/v1#x', 'fragment'],
    ['https://exa%00mple.com/', 'WHATWG'],
    [`https://example.com/${'x'.repeat(2048)}`, 'at most 2048'],
    ['example.com', 'absolute'],
    ['//example.com', 'absolute'],
    ['', 'absolute'],
  ])('refuses %j (%s)', (raw, mentions) => {
    const verdict = checkUrl(raw, HTTP_BASE_URL);
    expect(verdict.ok).toBe(false);
    expect(!verdict.ok && verdict.message).toContain(mentions);
  });

  it('refuses a value whose normalized form outgrows the limit', () => {
    const raw = `https://example.com/${'é'.repeat(40)}`;
    expect(raw.length).toBeLessThanOrEqual(100);
    expect(checkUrl(raw, { ...HTTP_BASE_URL, maxLength: 100 })).toMatchObject({ ok: false, message: expect.stringContaining('once normalized') });
  });

  it('drops credentials when the rule says so, keeping an ssh user; lower-cases hosts of any scheme', () => {
    expect(checkUrl('https://u:p@GitHub.com/a/b', REPO)).toEqual({ ok: true, href: 'https://github.com/a/b' });
    expect(checkUrl('ssh://git:pw@GitHub.com/a/b', REPO)).toEqual({ ok: true, href: 'ssh://git@github.com/a/b' });
    expect(checkUrl('file:///srv/git/a', REPO)).toEqual({ ok: true, href: 'file:///srv/git/a' });
    expect(checkUrl('ssh:///a/b', REPO)).toMatchObject({ ok: false });
    expect(checkUrl('ssh://-oProxyCommand=x/a', REPO)).toMatchObject({ ok: false, message: expect.stringContaining('"-"') });
  });

  it('gives forms that check again to themselves', () => {
    for (const raw of ['HTTPS://Example.COM:443/v1/', 'https://bücher.example/ä?q=ü#f', 'ssh://git@Host.example:22/a/b.git', 'git://h/a/%2e%2e/b']) {
      const first = checkUrl(raw, REPO);
      expect(first.ok).toBe(true);
      if (first.ok) expect(checkUrl(first.href, REPO)).toEqual(first);
    }
  });
});

import { isServerUrl } from './server-url';

// What class-validator's `@IsUrl({ require_tld: false, require_protocol: true })` answered for each (validator 13.15):
// the configuration's URLs keep those rules, so no deployment's value is refused after the move to JSON Schema.
describe('isServerUrl', () => {
  it.each([
    'http://localhost:3000',
    'https://agents.example.com/',
    'https://agents.example.com/base/?x=1#top',
    'ftp://files.example',
    'HTTPS://EXAMPLE.COM',
    'http://[::1]:8080',
    'http://[fe80::1%eth0]',
    'http://[::ffff:10.0.0.1]/',
    'http://10.0.0.1',
    'http://user:secret@example.com',
    'http://user@example.com',
    'http://example.com:',
    'http://ünïcode.example',
    'http:example.com',
    'http:%41@example.com',
  ])('accepts %j', (url) => {
    expect(isServerUrl(url)).toBe(true);
  });

  it.each([
    '',
    'localhost:3000',
    'example.com',
    '//example.com',
    'file:///srv/x',
    'ws://example.com',
    'mailto:a@example.com',
    'http://',
    'http:/example.com',
    'http:1234',
    'http:user@example.com',
    'http://exa mple.com',
    'http://<x>',
    'http://my_host',
    'http://-x.com',
    'http://x-.com',
    'http://300.0.0.1',
    'http://123',
    'http://a.123',
    'http://[1::2::3]',
    'http://[fe80::1%eth-0]',
    'http://[::1',
    'http://:@example.com',
    'http://@example.com',
    'http://a:b:c@example.com',
    'http://example.com:0',
    'http://example.com:65536',
    'http://example.com:80:80',
    'http://ｅxample.com',
    `http://${'a'.repeat(64)}.com`,
    `http://x/${'a'.repeat(2080)}`,
  ])('refuses %j', (url) => {
    expect(isServerUrl(url)).toBe(false);
  });

  it('takes a label of 63 characters and a URL of 2084', () => {
    expect(isServerUrl(`http://${'a'.repeat(63)}.com`)).toBe(true);
    expect(isServerUrl(`http://x/${'a'.repeat(2084 - 'http://x/'.length)}`)).toBe(true);
  });
});

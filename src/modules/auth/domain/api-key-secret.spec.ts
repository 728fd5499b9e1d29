import {
  generateApiKey,
  generateComputerToken,
  hashApiKey,
  isWellFormedApiKey,
  isWellFormedComputerToken,
  looksLikeApiKey,
  looksLikeComputerToken,
} from './api-key-secret';

describe('API keys and computer tokens', () => {
  it('makes a key of 256 random bits behind its prefix, stored as its SHA-256 only', () => {
    const { key, prefix, hash } = generateApiKey();
    expect(key).toMatch(/^apk_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice(4), 'base64url')).toHaveLength(32);
    expect(prefix).toBe(key.slice(0, 12));
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).toBe(hashApiKey(key));
    expect(hash).not.toContain(key.slice(4, 20));
  });

  it('never makes the same key twice (1,000 in a row)', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey().key));
    expect(keys.size).toBe(1000);
  });

  it('hashes one key to one value and a one-character change to another', () => {
    const { key } = generateApiKey();
    const changed = key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A');
    expect(hashApiKey(key)).toBe(hashApiKey(key));
    expect(hashApiKey(changed)).not.toBe(hashApiKey(key));
  });

  it.each([
    ['too short', (key: string) => key.slice(0, -1)],
    ['too long', (key: string) => `${key}A`],
    ['a character outside base64url', (key: string) => `${key.slice(0, -1)}+`],
    ['padding', (key: string) => `${key.slice(0, -1)}=`],
    ['an upper-case prefix', (key: string) => `APK_${key.slice(4)}`],
    ['whitespace around it', (key: string) => ` ${key}`],
    ['a newline after it', (key: string) => `${key}\n`],
  ])('refuses a key with %s before any lookup', (_, spoil) => {
    const { key } = generateApiKey();
    expect(isWellFormedApiKey(key)).toBe(true);
    expect(isWellFormedApiKey(spoil(key))).toBe(false);
  });

  it('keeps keys and computer tokens apart: one never passes for the other', () => {
    const { key } = generateApiKey();
    const { token, prefix, hash } = generateComputerToken();
    expect(token).toMatch(/^cpt_[A-Za-z0-9_-]{43}$/);
    expect(prefix).toBe(token.slice(0, 12));
    expect(hash).toBe(hashApiKey(token));
    expect([looksLikeApiKey(key), looksLikeComputerToken(key), isWellFormedComputerToken(key)]).toEqual([true, false, false]);
    expect([looksLikeComputerToken(token), looksLikeApiKey(token), isWellFormedApiKey(token)]).toEqual([true, false, false]);
    // The same random part under the other prefix is another credential with another hash.
    expect(hashApiKey(`cpt_${key.slice(4)}`)).not.toBe(hashApiKey(key));
  });
});

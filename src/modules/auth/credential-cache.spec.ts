import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../config/app-config';
import type { CallerRow } from './auth.repository';
import { CredentialCache } from './credential-cache';

const caller = { user_id: 'u1' } as CallerRow;

/** Counts the database reads the cache lets through. */
function loader(result: CallerRow | null) {
  const load = jest.fn(async () => result);
  return load;
}

describe('CredentialCache', () => {
  it('reads a caller once within AUTH_CACHE_MS, and again after it', async () => {
    const cache = new CredentialCache(loadConfig({ AUTH_CACHE_MS: '60' }));
    const load = loader(caller);
    expect(await cache.get('k', load)).toBe(caller);
    expect(await cache.get('k', load)).toBe(caller);
    expect(load).toHaveBeenCalledTimes(1);
    await sleep(90);
    await cache.get('k', load);
    expect(load).toHaveBeenCalledTimes(2);
  });

  it('does not remember an unknown credential (a key made a moment later works at once)', async () => {
    const cache = new CredentialCache(loadConfig({ AUTH_CACHE_MS: '60000' }));
    expect(await cache.get('k', loader(null))).toBeNull();
    expect(await cache.get('k', loader(caller))).toBe(caller);
  });

  it('forgets a revoked credential at once', async () => {
    const cache = new CredentialCache(loadConfig({ AUTH_CACHE_MS: '60000' }));
    await cache.get('k', loader(caller));
    cache.forget('k');
    expect(await cache.get('k', loader(null))).toBeNull();
  });

  it('lets one lookup per credential through at a time: a burst waits for it', async () => {
    const cache = new CredentialCache(loadConfig({ AUTH_CACHE_MS: '60000' }));
    const load = jest.fn(async () => (await sleep(20), caller));
    expect(await Promise.all(Array.from({ length: 50 }, () => cache.get('k', load)))).toEqual(Array(50).fill(caller));
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('answers the requests waiting on a lookup of a credential revoked meanwhile, and keeps nothing of it', async () => {
    const cache = new CredentialCache(loadConfig({ AUTH_CACHE_MS: '60000' }));
    const pending = cache.get('k', async () => (await sleep(20), caller));
    cache.forget('k');
    expect(await pending).toBe(caller);
    expect(await cache.get('k', loader(null))).toBeNull();
  });

  it('does not keep a failed lookup', async () => {
    const cache = new CredentialCache(loadConfig({ AUTH_CACHE_MS: '60000' }));
    await expect(cache.get('k', () => Promise.reject(new Error('database down')))).rejects.toThrow('database down');
    expect(await cache.get('k', loader(caller))).toBe(caller);
  });

  it('keeps credentials apart by key', async () => {
    const cache = new CredentialCache(loadConfig({ AUTH_CACHE_MS: '60000' }));
    const other = { user_id: 'u2' } as CallerRow;
    await cache.get('a', loader(caller));
    expect(await cache.get('b', loader(other))).toBe(other);
    expect(await cache.get('a', loader(other))).toBe(caller);
  });

  it("keeps a computer token's computer apart from the callers, and forgets it alone", async () => {
    const cache = new CredentialCache(loadConfig({ AUTH_CACHE_MS: '60000' }));
    const computer = { computerId: 'c1', organizationId: 'o1', ownerId: 'u1' };
    await cache.get('k', loader(caller));
    expect(await cache.computer('k', async () => computer)).toBe(computer);
    cache.forgetComputer('k');
    expect(await cache.computer('k', async () => null)).toBeNull();
    expect(await cache.get('k', loader(null))).toBe(caller);
  });

  it('caches nothing with AUTH_CACHE_MS=0', async () => {
    const cache = new CredentialCache(loadConfig({ AUTH_CACHE_MS: '0' }));
    const load = loader(caller);
    await cache.get('k', load);
    await cache.get('k', load);
    expect(load).toHaveBeenCalledTimes(2);
  });
});

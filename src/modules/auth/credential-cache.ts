import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { AppConfig } from '../../config/app-config';
import type { CallerRow } from './auth.repository';
import type { TokenComputer } from './contracts/computer-token-lookup';
import type { SessionWorker } from './contracts/worker-session-lookup';

/** Up to 10,000 answers by key for `ttl` ms, one lookup per key at a time; null when nothing is cached. */
function answers<V extends object>(ttl: number): LRUCache<string, V, () => Promise<V | null>> | null {
  return ttl > 0
    ? new LRUCache<string, V, () => Promise<V | null>>({
        max: 10_000,
        ttl,
        // lru-cache reads the clock once per `ttlResolution` ms, with a timer to forget it: at 1 ms (its default), a
        // busy server set a timer for most requests. 10 ms keeps an entry at most that much past its ttl.
        ttlResolution: 10,
        // One lookup per credential at a time: the requests that arrive while it runs (every client's burst, each
        // time an entry expires) wait for it rather than each asking the database. An unknown one is not kept.
        fetchMethod: async (_key, _stale, { context: load }) => (await load()) ?? undefined,
        // A credential forgotten mid-lookup (revoked here): the lookup still answers the requests waiting for it.
        ignoreFetchAbort: true,
      })
    : null;
}

/**
 * Callers recently read from the database, by credential, for AUTH_CACHE_MS (default 1 s): at
 * high request rates the credential lookup was half of every request's database round trips.
 * Revocation through this instance takes effect at once (the entry is dropped); a change made
 * elsewhere (another instance, the CLI, a role or feature change) within the cache's lifetime.
 * Expiry is checked on every request from the cached row.
 *
 * A computer's agent token is kept apart, as the computer it names: its owner as a caller is the
 * user's entry (`userKey`), shared with the owner's JWTs and other computers, and forgotten with them.
 *
 * A worker's session token is kept as the worker it names, for the request edge to count its requests (the worker
 * channel checks the session itself): one that ended is counted as its worker's for at most AUTH_CACHE_MS.
 */
@Injectable()
export class CredentialCache {
  private readonly callers: LRUCache<string, CallerRow, () => Promise<CallerRow | null>> | null;
  private readonly computers: LRUCache<string, TokenComputer, () => Promise<TokenComputer | null>> | null;
  private readonly workers: LRUCache<string, SessionWorker, () => Promise<SessionWorker | null>> | null;

  constructor(config: AppConfig) {
    this.callers = answers<CallerRow>(config.AUTH_CACHE_MS);
    this.computers = answers<TokenComputer>(config.AUTH_CACHE_MS);
    this.workers = answers<SessionWorker>(config.AUTH_CACHE_MS);
  }

  /** The key of a user's own entry (no API key): JWTs and computer tokens act as it. */
  static userKey(userId: string, organizationId: string): string {
    return `user:${organizationId}:${userId}`;
  }

  async get(key: string, load: () => Promise<CallerRow | null>): Promise<CallerRow | null> {
    if (!this.callers) return load();
    // A hit (nearly every request) skips fetch's promises; a miss or a lookup under way goes through it.
    return this.callers.get(key) ?? (await this.callers.fetch(key, { context: load })) ?? null;
  }

  /** The caller cached for `key`, without a lookup: undefined when none is (or caching is off). */
  peek(key: string): CallerRow | undefined {
    return this.callers?.get(key);
  }

  forget(key: string): void {
    this.callers?.delete(key);
  }

  /** The computer an agent token's hash names. */
  async computer(tokenHash: string, load: () => Promise<TokenComputer | null>): Promise<TokenComputer | null> {
    if (!this.computers) return load();
    return this.computers.get(tokenHash) ?? (await this.computers.fetch(tokenHash, { context: load })) ?? null;
  }

  forgetComputer(tokenHash: string): void {
    this.computers?.delete(tokenHash);
  }

  /** The worker a session token's hash names. */
  async worker(sessionHash: string, load: () => Promise<SessionWorker | null>): Promise<SessionWorker | null> {
    if (!this.workers) return load();
    return this.workers.get(sessionHash) ?? (await this.workers.fetch(sessionHash, { context: load })) ?? null;
  }
}

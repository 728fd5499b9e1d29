import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { AppConfig } from '../../config/app-config';
import type { CallerRow } from './auth.repository';

/**
 * Callers recently read from the database, by credential, for AUTH_CACHE_MS (default 1 s): at
 * high request rates the credential lookup was half of every request's database round trips.
 * Revocation through this instance takes effect at once (the entry is dropped); a change made
 * elsewhere (another instance, the CLI, a role or feature change) within the cache's lifetime.
 * Expiry is checked on every request from the cached row.
 */
@Injectable()
export class CredentialCache {
  private readonly callers: LRUCache<string, CallerRow, () => Promise<CallerRow | null>> | null;

  constructor(config: AppConfig) {
    this.callers =
      config.AUTH_CACHE_MS > 0
        ? new LRUCache({
            max: 10_000,
            ttl: config.AUTH_CACHE_MS,
            // One lookup per credential at a time: the requests that arrive while it runs (every client's burst, each
            // time an entry expires) wait for it rather than each asking the database. An unknown one is not kept.
            fetchMethod: async (_key, _stale, { context: load }) => (await load()) ?? undefined,
            // A credential forgotten mid-lookup (revoked here): the lookup still answers the requests waiting for it.
            ignoreFetchAbort: true,
          })
        : null;
  }

  async get(key: string, load: () => Promise<CallerRow | null>): Promise<CallerRow | null> {
    if (!this.callers) return load();
    return (await this.callers.fetch(key, { context: load })) ?? null;
  }

  forget(key: string): void {
    this.callers?.delete(key);
  }
}

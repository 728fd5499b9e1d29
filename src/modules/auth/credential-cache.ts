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
  private readonly callers: LRUCache<string, CallerRow> | null;

  constructor(config: AppConfig) {
    this.callers = config.AUTH_CACHE_MS > 0 ? new LRUCache({ max: 10_000, ttl: config.AUTH_CACHE_MS }) : null;
  }

  async get(key: string, load: () => Promise<CallerRow | null>): Promise<CallerRow | null> {
    const cached = this.callers?.get(key);
    if (cached) return cached;
    const caller = await load();
    if (caller) this.callers?.set(key, caller);
    return caller;
  }

  forget(key: string): void {
    this.callers?.delete(key);
  }
}

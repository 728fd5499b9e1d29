import { Injectable } from '@nestjs/common';
import { credentialIdOf, Principal } from '../auth';
import { SessionsError, SessionsErrorCode } from '../sessions';

/**
 * Deltas one credential may send a second on one instance: an agent sends at most about ten a second per turn
 * (coalesced every 100 ms), so this leaves room for a few turns of one key, and none for a flood.
 */
export const DELTAS_PER_SECOND = 50;
/** Windows kept before the finished ones are forgotten. */
const KEPT = 10_000;

/**
 * The live text's own rate limit (see OwnRateLimit): deltas do not spend the shared budgets, so an agent streaming
 * its model's text does not starve its own appends or its organization's users. Counted in memory per instance,
 * in one-second windows, before the session is read.
 */
@Injectable()
export class DeltaRate {
  private readonly windows = new Map<string, { start: number; count: number }>();

  /** Counts one delta; past the limit, 429 `too_many_deltas` with `Retry-After: 1`. */
  take(principal: Principal, now = Date.now()): void {
    const credential = credentialIdOf(principal);
    let window = this.windows.get(credential);
    if (!window || now - window.start >= 1_000) {
      if (this.windows.size >= KEPT) this.forget(now);
      window = { start: now, count: 0 };
      this.windows.set(credential, window);
    }
    if (++window.count <= DELTAS_PER_SECOND) return;
    const error = new SessionsError(
      SessionsErrorCode.TooManyDeltas,
      `Too many deltas: at most ${DELTAS_PER_SECOND} a second per credential. Send the text coalesced (every 100 ms), or retry after 1 s.`,
      { limit: DELTAS_PER_SECOND },
    );
    error.retryAfterSeconds = 1;
    throw error;
  }

  private forget(now: number): void {
    for (const [key, window] of this.windows) if (now - window.start >= 1_000) this.windows.delete(key);
  }
}

import { Logger } from '@nestjs/common';
import { BudgetLedger } from './budget-ledger';

/** One client's window as this instance sees it. */
interface WindowState {
  start: number;
  end: number;
  /** Requests this instance may still serve from the blocks it took. */
  tokens: number;
  /** How much of the budget all instances had taken at this instance's last grant. */
  taken: number;
  /** The ledger has nothing left for this window. */
  spent: boolean;
  /** A grant under way; requests that find no tokens wait for it rather than ask again. */
  pending?: Promise<void>;
}

/** A request counted in its window: `current` above the limit once the window's budget is spent. */
export interface Count {
  current: number;
  /** Milliseconds to the window's end. */
  ttl: number;
}

/**
 * Fixed windows (aligned to multiples of the window length, so every instance agrees on them)
 * served from blocks of budget taken from a ledger. `current` is this instance's best estimate
 * of the requests counted in the window, above `max` once the budget is spent.
 */
export class LeasedCounter {
  private readonly windows = new Map<string, WindowState>();
  private readonly logger = new Logger('RateLimits');
  private lastFailureLog = 0;

  constructor(private readonly ledger: BudgetLedger) {}

  /**
   * Counts one request against `key`'s window. While this instance holds tokens (almost every request) the answer
   * comes at once, without a promise: this runs on every request. Otherwise it comes after a grant from the ledger;
   * null when the ledger failed, so that the request passes unlimited (logged at most every 10 s).
   */
  count(key: string, timeWindow: number, max: number): Count | Promise<Count | null> {
    const now = Date.now();
    const start = now - (now % timeWindow);
    const ttl = start + timeWindow - now;
    let state = this.windows.get(key);
    if (!state || state.start !== start) {
      state = { start, end: start + timeWindow, tokens: 0, taken: 0, spent: false };
      this.windows.set(key, state);
    }
    if (state.tokens > 0) {
      state.tokens--;
      return { current: Math.max(1, state.taken - state.tokens), ttl };
    }
    if (state.spent) return { current: max + 1, ttl };
    return this.afterGrant(key, state, timeWindow, max);
  }

  /** Drops the state of windows that have ended. */
  sweep(now = Date.now()): void {
    for (const [key, state] of this.windows) if (state.end <= now && state.pending === undefined) this.windows.delete(key);
  }

  /** Requests that find no tokens wait for one grant rather than each ask the ledger, then count again. */
  private async afterGrant(key: string, state: WindowState, timeWindow: number, max: number): Promise<Count | null> {
    try {
      state.pending ??= this.take(key, state, max);
      await state.pending;
    } catch (error: unknown) {
      if (Date.now() - this.lastFailureLog > 10_000) {
        this.lastFailureLog = Date.now();
        this.logger.warn({ err: error }, 'Rate limit budget unavailable: requests pass unlimited until it answers');
      }
      return null;
    }
    return this.count(key, timeWindow, max);
  }

  private async take(key: string, state: WindowState, max: number): Promise<void> {
    try {
      const wanted = this.ledger.blockOf(max);
      const grant = await this.ledger.take(key, state.start, wanted, max);
      state.tokens += grant.granted;
      state.taken = grant.taken;
      state.spent = grant.taken >= max;
    } finally {
      state.pending = undefined;
    }
  }
}

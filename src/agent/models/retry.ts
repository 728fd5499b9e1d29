import { setTimeout as sleep } from 'node:timers/promises';
import { ModelError, RetryNotice } from './model-api';

/** How a model call is tried again after a rate limit, a server error or a network error. */
export interface RetryPolicy {
  /** Retries after the first call (so at most maxRetries + 1 calls). */
  maxRetries: number;
  /** The first backoff's ceiling; each next one doubles, up to maxDelayMs (full jitter: a random wait below the ceiling). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** No retry whose wait would end past this long after the first call. */
  maxTotalMs: number;
  /** A vendor's `Retry-After` is waited for, up to this. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 5, baseDelayMs: 1_000, maxDelayMs: 30_000, maxTotalMs: 120_000, maxRetryAfterMs: 60_000 };

/**
 * Calls `attempt` until it succeeds, or fails with an error that is not worth retrying, or the policy
 * is spent: then the last error, saying how many calls were made. Never retries once `signal` aborted.
 */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  policy: RetryPolicy,
  options: { signal?: AbortSignal; onRetry?: (notice: RetryNotice) => void },
): Promise<T> {
  const started = Date.now();
  for (let attempts = 1; ; attempts++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof ModelError) || options.signal?.aborted) throw error;
      const delayMs = error.retryAfterMs !== undefined ? Math.min(error.retryAfterMs, policy.maxRetryAfterMs) : backoff(policy, attempts);
      const spent = attempts > policy.maxRetries || Date.now() - started + delayMs > policy.maxTotalMs;
      if (!error.retryable || spent) {
        if (attempts === 1) throw error;
        const last = error.status === undefined ? 'no answer' : `status ${error.status}`;
        throw new ModelError(`${error.message} (gave up after ${attempts} attempts; last: ${last})`, {
          status: error.status,
          retryable: false,
          attempts,
        });
      }
      options.onRetry?.({ attempt: attempts, delayMs, error });
      // An abort during the wait ends the call with the abort's error, as an abort of the call itself does.
      await sleep(delayMs, undefined, { signal: options.signal });
    }
  }
}

/** Full jitter: a random wait below min(max, base * 2^(attempt - 1)). */
function backoff(policy: RetryPolicy, attempt: number): number {
  return Math.floor(Math.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1)));
}

export { retryAfterMs } from '../../contract/retrying-request';

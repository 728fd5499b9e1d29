/**
 * When to try a failed delivery again: after `schedule[retry]` milliseconds with ±20% jitter (so
 * receivers that failed together are not hit together again), or null when no retry is left.
 */
export function nextRetryDelay(schedule: readonly number[], retry: number, random = Math.random): number | null {
  if (retry >= schedule.length) return null;
  return Math.round(schedule[retry] * (0.8 + 0.4 * random()));
}

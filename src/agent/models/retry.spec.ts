import { ModelError } from './model-api';
import { retryAfterMs, withRetries } from './retry';

describe('Retry-After', () => {
  const now = Date.parse('2026-11-27T10:00:00Z');
  it('reads delay-seconds and HTTP dates, and nothing else', () => {
    expect(retryAfterMs('7', now)).toBe(7_000);
    expect(retryAfterMs('Fri, 27 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Fri, 27 Nov 2026 09:59:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });
});

describe('withRetries', () => {
  const policy = { maxRetries: 5, baseDelayMs: 1, maxDelayMs: 2, maxTotalMs: 10_000, maxRetryAfterMs: 50 };

  it('caps a long Retry-After at maxRetryAfterMs', async () => {
    const delays: number[] = [];
    let calls = 0;
    const result = await withRetries(
      () => (++calls === 1 ? Promise.reject(new ModelError('429', { status: 429, retryable: true, retryAfterMs: 3_600_000 })) : Promise.resolve('ok')),
      policy,
      { onRetry: ({ delayMs }) => delays.push(delayMs) },
    );
    expect(result).toBe('ok');
    expect(delays).toEqual([50]);
  });

  it('passes on errors that are not the model’s without retrying', async () => {
    let calls = 0;
    await expect(withRetries(() => Promise.reject(new TypeError(`bug ${++calls}`)), policy, {})).rejects.toThrow('bug 1');
  });
});

import { BudgetLedger, Grant, MemoryLedger } from './budget-ledger';
import { LeasedCounter } from './leased-store';

/** The database's side of PostgresLedger, in memory: several counters (instances) share it. */
class SharedLedger implements BudgetLedger {
  readonly used = new Map<string, number>();
  takes = 0;

  constructor(private readonly delayMs = 0) {}

  blockOf(max: number): number {
    return Math.max(1, Math.ceil(max * 0.05));
  }

  async take(key: string, windowStart: number, wanted: number, max: number): Promise<Grant> {
    this.takes++;
    if (this.delayMs) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    const id = `${key}@${windowStart}`;
    const before = this.used.get(id) ?? 0;
    if (before >= max) return { granted: 0, taken: max };
    this.used.set(id, before + wanted);
    return { granted: Math.min(wanted, max - before), taken: Math.min(before + wanted, max) };
  }

  forget(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Windows are aligned to the clock: a test that crossed a window's end would see a fresh budget (one more take; seen
 * once in CI at a minute's turn). A year-long window makes that a one-in-millions chance.
 */
const WINDOW = 365 * 24 * 3600_000;

const count = async (counter: LeasedCounter, key: string, max: number) => {
  const counted = await counter.count(key, WINDOW, max);
  if (!counted) throw new Error('not counted: the ledger failed');
  return counted;
};

describe('LeasedCounter', () => {
  it('two instances sharing a ledger accept the limit in all, not each', async () => {
    const ledger = new SharedLedger();
    const instances = [new LeasedCounter(ledger), new LeasedCounter(ledger)];
    let accepted = 0;
    for (let i = 0; i < 300; i++) if ((await count(instances[i % 2], 'k', 100)).current <= 100) accepted++;
    expect(accepted).toBe(100);
    expect(ledger.takes).toBeLessThanOrEqual(100 / 5 + 2);
  });

  it('requests arriving together wait for one grant instead of each asking the ledger', async () => {
    const ledger = new SharedLedger(20);
    const counter = new LeasedCounter(ledger);
    const results = await Promise.all(Array.from({ length: 40 }, () => count(counter, 'k', 100)));
    expect(results.filter((r) => r.current <= 100)).toHaveLength(40);
    expect(ledger.takes).toBe(8);
  });

  it('a burst far over the limit stops asking the ledger once it is spent', async () => {
    const ledger = new SharedLedger();
    const counter = new LeasedCounter(ledger);
    const results = await Promise.all(Array.from({ length: 2000 }, () => count(counter, 'k', 10)));
    expect(results.filter((r) => r.current <= 10)).toHaveLength(10);
    expect(ledger.takes).toBe(10);
  });

  it('answers the time to the end of the fixed window, and keys count apart', async () => {
    const counter = new LeasedCounter(new MemoryLedger());
    const first = await count(counter, 'a', 2);
    expect(first.current).toBe(1);
    const toWindowEnd = WINDOW - (Date.now() % WINDOW);
    expect(first.ttl).toBeGreaterThanOrEqual(toWindowEnd);
    expect(first.ttl).toBeLessThanOrEqual(Math.min(toWindowEnd + 50, WINDOW));
    expect((await count(counter, 'a', 2)).current).toBe(2);
    expect((await count(counter, 'a', 2)).current).toBe(3);
    expect((await count(counter, 'b', 2)).current).toBe(1);
  });

  it('a failing ledger lets the request through uncounted (null), not a hang, and asks again next time', async () => {
    let takes = 0;
    const counter = new LeasedCounter({ blockOf: () => 1, take: () => (takes++, Promise.reject(new Error('down'))), forget: () => Promise.resolve() });
    expect(await counter.count('k', WINDOW, 5)).toBeNull();
    expect(await counter.count('k', WINDOW, 5)).toBeNull();
    expect(takes).toBe(2);
  });

  it('answers at once, without a promise, while the instance holds tokens', async () => {
    const counter = new LeasedCounter(new MemoryLedger());
    await count(counter, 'k', 100);
    expect(counter.count('k', WINDOW, 100)).toEqual({ current: 2, ttl: expect.any(Number) });
  });
});

import { jsonLimitBroken } from './json-limits';

const nestsDeeperThan = (text: string, max: number) => jsonLimitBroken(text, max) === 'depth';

const nested = (levels: number, open = '[', close = ']') => `${open.repeat(levels)}${close.repeat(levels)}`;

describe('jsonLimitBroken: depth', () => {
  it('counts arrays and objects, mixed, as levels', () => {
    expect(nestsDeeperThan(nested(64), 64)).toBe(false);
    expect(nestsDeeperThan(nested(65), 64)).toBe(true);
    expect(nestsDeeperThan(`${'{"a":['.repeat(32)}1${']}'.repeat(32)}`, 64)).toBe(false);
    expect(nestsDeeperThan(`${'{"a":['.repeat(32)}{}${']}'.repeat(32)}`, 64)).toBe(true);
    expect(nestsDeeperThan('1', 1)).toBe(false);
    expect(nestsDeeperThan('{}', 1)).toBe(false);
  });

  it('measures depth, not the number of containers side by side', () => {
    expect(nestsDeeperThan(`[${Array.from({ length: 10_000 }, () => '[[]]').join(',')}]`, 3)).toBe(false);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(nestsDeeperThan(JSON.stringify({ text: '['.repeat(1000) }), 2)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ text: '"[[[[ \\" [[[[' + '{'.repeat(100) }), 1)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify(['\\', ['x']]), 1)).toBe(true);
    expect(nestsDeeperThan(JSON.stringify(['\\"', ['x']]), 1)).toBe(true);
  });

  it('leaves malformed text to the parser', () => {
    expect(nestsDeeperThan('["unterminated [[[[[', 2)).toBe(false);
    expect(nestsDeeperThan(']]]][[', 1)).toBe(false);
  });

  it('scans a 32 MiB body in no more time than JSON.parse takes to read it', () => {
    // Against the parser on the same text, not a wall-clock budget: a loaded machine slows both alike.
    const elapsed = (work: () => unknown) => {
      const started = performance.now();
      work();
      return performance.now() - started;
    };
    const bodies = [JSON.stringify({ data: 'A'.repeat(32 * 1024 * 1024) }), `[${Array.from({ length: 100_000 }, () => '[[{"a":1,"b":"x"}]]').join(',')}]`];
    for (const body of bodies) {
      const parse = Math.min(...[0, 1].map(() => elapsed(() => JSON.parse(body))));
      const scan = Math.min(...[0, 1].map(() => elapsed(() => expect(nestsDeeperThan(body, 64)).toBe(false))));
      expect(scan).toBeLessThan(parse * 2);
    }
  });
});

describe('jsonLimitBroken: values', () => {
  it('counts items and members at every level, and containers, but nothing inside strings', () => {
    expect(jsonLimitBroken(JSON.stringify(Array(99).fill(0)), 64, 100)).toBeUndefined();
    expect(jsonLimitBroken(JSON.stringify(Array(101).fill(0)), 64, 100)).toBe('values');
    expect(jsonLimitBroken(JSON.stringify({ a: Array(60).fill(0), b: Array(60).fill({}) }), 64, 100)).toBe('values');
    expect(jsonLimitBroken(JSON.stringify({ text: ','.repeat(10_000), list: '[[[[' }), 64, 10)).toBeUndefined();
  });

  it('stops at the first broken limit, whichever it is', () => {
    expect(jsonLimitBroken(`[${'0,'.repeat(200)}${'['.repeat(10)}`, 5, 100)).toBe('values');
    expect(jsonLimitBroken(`${'['.repeat(10)}${'0,'.repeat(200)}`, 5, 100)).toBe('depth');
  });
});

import { nestsDeeperThan } from './json-depth';

const nested = (levels: number, open = '[', close = ']') => `${open.repeat(levels)}${close.repeat(levels)}`;

describe('nestsDeeperThan', () => {
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

  it('scans a 32 MiB string body quickly', () => {
    const body = JSON.stringify({ data: 'A'.repeat(32 * 1024 * 1024) });
    const started = performance.now();
    expect(nestsDeeperThan(body, 64)).toBe(false);
    expect(performance.now() - started).toBeLessThan(200);
  });
});

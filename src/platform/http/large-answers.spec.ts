import { stringifyInSlices } from './large-answers';

describe('stringifyInSlices', () => {
  it('writes what JSON.stringify writes', async () => {
    const values: unknown[] = [
      { messages: [], pagination: { hasMore: false, nextCursor: null } },
      { a: undefined, b: () => 1, c: [undefined, () => 1, null, 1.5, -0, 'é\u2028"\\'], d: { e: { f: { g: [1, { h: 2 }] } } } },
      { when: new Date(0), nested: [[[[['deep']]]]], empty: {}, list: [{}, []] },
      [1, 'two', { three: [3] }],
      'text',
      42,
      null,
    ];
    for (const value of values) expect(await stringifyInSlices(value)).toBe(JSON.stringify(value));
  });

  it('lets other work run while it writes a 16 MB page', async () => {
    const message = () => ({ id: 'm', role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'n', input: { v: Array(50_000).fill(0) } }] });
    const page = { messages: Array.from({ length: 160 }, message), pagination: { hasMore: false, nextCursor: null } };
    let ranMeanwhile = 0;
    const ticker = setInterval(() => ranMeanwhile++, 0);
    const text = await stringifyInSlices(page);
    clearInterval(ticker);
    expect(text).toBe(JSON.stringify(page));
    expect(ranMeanwhile).toBeGreaterThan(0);
  });
});

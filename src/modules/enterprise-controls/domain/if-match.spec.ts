import { etagOf, parseIfMatch } from './if-match';

describe('parseIfMatch', () => {
  it('accepts any revision without the header or with *', () => {
    expect(parseIfMatch(undefined)).toBeUndefined();
    expect(parseIfMatch('*')).toBeUndefined();
  });

  it('reads quoted tags as ETag answers them, bare numbers, and lists', () => {
    expect(parseIfMatch(etagOf(3))).toEqual([3]);
    expect(parseIfMatch('4')).toEqual([4]);
    expect(parseIfMatch('"1", "2"')).toEqual([1, 2]);
  });

  it('lets weak tags match nothing', () => {
    expect(parseIfMatch('W/"3"')).toEqual([]);
  });

  it('refuses anything else', () => {
    for (const header of ['', 'abc', '"3', '"-1"', '"3" "4"', '"12345678901"']) expect(() => parseIfMatch(header)).toThrow(/If-Match/);
  });
});

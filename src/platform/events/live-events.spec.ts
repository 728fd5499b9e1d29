import { piecesOf } from './live-events';

describe('piecesOf (NOTIFY payloads are bounded)', () => {
  it('splits text so that each piece, JSON-encoded, stays within the bound, never cutting a character', () => {
    const text = `${'a"\\\n'.repeat(500)}😀é${'z'.repeat(3000)}`;
    const pieces = piecesOf(text, 1000);
    expect(pieces.join('')).toBe(text);
    for (const piece of pieces) expect(Buffer.byteLength(JSON.stringify(piece)) - 2).toBeLessThanOrEqual(1000);
    expect(pieces.every((piece) => !/^[\uDC00-\uDFFF]/.test(piece))).toBe(true);
    expect(piecesOf('short', 1000)).toEqual(['short']);
    expect(piecesOf('', 1000)).toEqual([]);
  });
});

import { looksMasked, maskSecret } from './secret-mask';

describe('maskSecret', () => {
  it('shows only the last four characters of a long key', () => {
    expect(maskSecret('sk-live-abcdefghijkl1234')).toBe('****1234');
  });

  it('shows nothing of a short key', () => {
    expect(maskSecret('short-key')).toBe('****');
  });

  it('recognizes its own masks and nothing a real key looks like', () => {
    expect(looksMasked(maskSecret('sk-live-abcdefghijkl1234'))).toBe(true);
    expect(looksMasked('****')).toBe(true);
    expect(looksMasked('sk-live-abcdefghijkl1234')).toBe(false);
    expect(looksMasked('****12345')).toBe(false);
  });
});

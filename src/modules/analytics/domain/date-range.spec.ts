import { HISTORY_START, parseRange } from './date-range';

const NOW = new Date('2026-03-10T12:00:00Z');

describe('parseRange', () => {
  it('answers every day of a closed range', () => {
    expect(parseRange('2026-03-01', '2026-03-03', NOW)).toEqual({ start: '2026-03-01', end: '2026-03-03', days: ['2026-03-01', '2026-03-02', '2026-03-03'] });
    expect(parseRange('2026-03-09', '2026-03-09', NOW).days).toEqual(['2026-03-09']);
  });

  it('starts the days at the history start, and has none for a range before it', () => {
    expect(parseRange('2026-01-10', '2026-01-15', NOW).days).toEqual([HISTORY_START, '2026-01-15']);
    expect(parseRange('2025-12-01', '2025-12-31', NOW).days).toEqual([]);
  });

  it.each([
    ['2026-03-10', '2026-03-10', /endDate: must be before today/],
    ['2026-03-01', '2026-03-11', /endDate: must be before today/],
    ['2026-03-05', '2026-03-01', /startDate: must not be after endDate/],
    ['2026-02-30', '2026-03-01', /startDate: must be a real date/],
    ['2026-3-01', '2026-03-02', /startDate: must be a real date/],
    [undefined, '2026-03-02', /startDate: is required/],
    ['2026-03-01', '', /endDate: is required/],
    ['2024-01-01', '2026-03-01', /at most 400 days/],
  ])('refuses %s .. %s', (start, end, message) => {
    expect(() => parseRange(start, end, NOW)).toThrow(message);
  });
});

/**
 * The analytics API's date rules (docs/analytics.md, "Common rules"), checked before a request is sent so the console
 * never sends one the API would refuse: YYYY-MM-DD UTC days, both required and real, start not after end, the range
 * ending before today (UTC: only closed days), at most 400 days. Days before the history start are accepted and
 * answered empty.
 */
export const MAX_RANGE_DAYS = 400;
export const HISTORY_START = '2026-01-14';
const DAY_MS = 86_400_000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

export const todayUtc = (now = new Date()) => now.toISOString().slice(0, 10);
export const addDays = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
export const yesterdayUtc = (now = new Date()) => addDays(todayUtc(now), -1);

const isRealDate = (value: string) => DATE.test(value) && !Number.isNaN(Date.parse(value)) && new Date(Date.parse(value)).toISOString().slice(0, 10) === value;

export interface RangeProblem {
  field: 'start' | 'end';
  message: string;
}

/** Why the API would refuse this range, or null when it would answer it. */
export function rangeProblem(start: string, end: string, now = new Date()): RangeProblem | null {
  if (!start) return { field: 'start', message: 'Choose a start date.' };
  if (!isRealDate(start)) return { field: 'start', message: 'The start must be a real date (YYYY-MM-DD).' };
  if (!end) return { field: 'end', message: 'Choose an end date.' };
  if (!isRealDate(end)) return { field: 'end', message: 'The end must be a real date (YYYY-MM-DD).' };
  const today = todayUtc(now);
  if (end >= today) return { field: 'end', message: `The end must be before today (${today}, UTC): analytics cover closed days, through yesterday.` };
  if (start > end) return { field: 'start', message: 'The start must not be after the end.' };
  const span = (Date.parse(end) - Date.parse(start)) / DAY_MS + 1;
  if (span > MAX_RANGE_DAYS) return { field: 'end', message: `The range is ${span} days; one request covers at most ${MAX_RANGE_DAYS} days.` };
  return null;
}

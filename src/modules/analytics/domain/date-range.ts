import { validationError } from '../../../platform/http/validation';

/** The first day the service has data for (spec, Date rules 3). */
export const HISTORY_START = '2026-01-14';
/** The longest range one request may cover (our decision, so one request stays cheap). */
export const MAX_RANGE_DAYS = 400;

const DAY_MS = 86_400_000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

export interface DateRange {
  /** As requested (echoed in `meta`). */
  start: string;
  end: string;
  /** The days answered: from the later of `start` and HISTORY_START through `end`; none when the range ends before the history starts. */
  days: string[];
}

/**
 * The spec's date rules: both dates required, YYYY-MM-DD and real, UTC, `startDate` not after
 * `endDate`, and data through yesterday only (a range including today or later is 400).
 */
export function parseRange(startDate: unknown, endDate: unknown, now = new Date()): DateRange {
  const start = parseDate('startDate', startDate);
  const end = parseDate('endDate', endDate);
  const today = now.toISOString().slice(0, 10);
  if (end >= today) throw invalid('endDate', `must be before today (${today} UTC): analytics cover closed days, through yesterday`);
  if (start > end) throw invalid('startDate', 'must not be after endDate');
  const span = (Date.parse(end) - Date.parse(start)) / DAY_MS + 1;
  if (span > MAX_RANGE_DAYS) throw invalid('endDate', `is ${span} days after startDate; one request covers at most ${MAX_RANGE_DAYS} days`);
  const days: string[] = [];
  for (let t = Date.parse(start > HISTORY_START ? start : HISTORY_START); t <= Date.parse(end); t += DAY_MS) days.push(new Date(t).toISOString().slice(0, 10));
  return { start, end, days };
}

function parseDate(field: string, value: unknown): string {
  if (value === undefined || value === '') throw invalid(field, 'is required (YYYY-MM-DD, UTC)');
  if (typeof value !== 'string' || !DATE.test(value) || Number.isNaN(Date.parse(value)) || new Date(Date.parse(value)).toISOString().slice(0, 10) !== value) {
    throw invalid(field, 'must be a real date in YYYY-MM-DD format');
  }
  return value;
}

function invalid(field: string, message: string) {
  return validationError([{ field, message }]);
}

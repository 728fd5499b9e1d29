import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from './client';

/** Closed UTC days, `YYYY-MM-DD`, both included. */
export interface DayRange {
  start: string;
  end: string;
}

type Report = 'tokens' | 'activity' | 'tools' | 'productivity';

/** The analytics' query keys: a report over a range, and one page of users. */
export const analyticsKeys = {
  report: (report: Report, range: DayRange) => ['analytics', report, range.start, range.end] as const,
  users: (range: DayRange, cursor: string | undefined) => ['analytics', 'users', range.start, range.end, cursor ?? ''] as const,
};

const dates = (range: DayRange) => ({ startDate: range.start, endDate: range.end });

export function useTokenUsage(range: DayRange) {
  return useQuery({
    queryKey: analyticsKeys.report('tokens', range),
    queryFn: () => unwrap(api.GET('/api/v1/analytics/tokens', { params: { query: dates(range) } })),
  });
}

export function useActiveUsers(range: DayRange) {
  return useQuery({
    queryKey: analyticsKeys.report('activity', range),
    queryFn: () => unwrap(api.GET('/api/v1/analytics/activity', { params: { query: dates(range) } })),
  });
}

export function useToolUsage(range: DayRange) {
  return useQuery({
    queryKey: analyticsKeys.report('tools', range),
    queryFn: () => unwrap(api.GET('/api/v1/analytics/tools', { params: { query: dates(range) } })),
  });
}

export function useProductivity(range: DayRange) {
  return useQuery({
    queryKey: analyticsKeys.report('productivity', range),
    queryFn: () => unwrap(api.GET('/api/v1/analytics/productivity', { params: { query: dates(range) } })),
  });
}

/** One page of users (a row per user and active day); the page shown stays while the next loads. */
export function useAnalyticsUsers(range: DayRange, cursor: string | undefined, limit: number) {
  return useQuery({
    queryKey: analyticsKeys.users(range, cursor),
    queryFn: () => unwrap(api.GET('/api/v1/analytics/users', { params: { query: { ...dates(range), limit: String(limit), ...(cursor ? { cursor } : {}) } } })),
    placeholderData: (previous) => previous,
  });
}

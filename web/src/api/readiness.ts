import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from './client';

/** The readiness reports' query keys: the criteria, the organization's level, its repositories, one's levels, one report. */
export const readinessKeys = {
  criteria: ['readiness', 'criteria'] as const,
  level: ['readiness', 'level'] as const,
  repositories: ['readiness', 'repositories'] as const,
  /** A new report (`latestReportId`) makes another history. */
  levels: (repoId: string, latestReportId: string) => ['readiness', 'levels', repoId, latestReportId] as const,
  report: (reportId: string | undefined) => ['readiness', 'report', reportId] as const,
};

/** The criteria, pillars and levels the evaluator checks: they change only with the server. */
export function useReadinessCriteria() {
  return useQuery({
    queryKey: readinessKeys.criteria,
    queryFn: () => unwrap(api.GET('/api/organization/readiness-criteria')),
    staleTime: Infinity,
  });
}

export function useMaturityLevel() {
  return useQuery({ queryKey: readinessKeys.level, queryFn: () => unwrap(api.GET('/api/organization/maturity-level')) });
}

export function useReadinessRepositories() {
  return useQuery({ queryKey: readinessKeys.repositories, queryFn: () => unwrap(api.GET('/api/organization/readiness-repositories')) });
}

/** A repository's level at each report, oldest first. */
export function useRepositoryLevels(repository: { repoId: string; latestReportId: string }) {
  return useQuery({
    queryKey: readinessKeys.levels(repository.repoId, repository.latestReportId),
    queryFn: () => unwrap(api.GET('/api/organization/readiness-repositories/{repoId}/levels', { params: { path: { repoId: repository.repoId } } })),
  });
}

/**
 * One report, through the spec's list: newest first, strictly older than `startAfter` (its newer neighbour, none for
 * the latest). Nothing is asked while `reportId` is undefined.
 */
export function useReadinessReport(repoId: string, reportId: string | undefined, newerReportId: string | undefined) {
  return useQuery({
    queryKey: readinessKeys.report(reportId),
    enabled: reportId !== undefined,
    queryFn: async () => {
      const page = await unwrap(
        api.GET('/api/organization/maturity-level-reports', {
          params: { query: { repoId, limit: '1', ...(newerReportId ? { startAfter: newerReportId } : {}) } },
        }),
      );
      return page.reports[0] ?? null;
    },
  });
}

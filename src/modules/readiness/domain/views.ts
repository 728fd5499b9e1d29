import type { ApiSchema } from '../../../platform/http/api-schema';
import { ReadinessReportEntity } from '../entities';
import { CRITERIA, LEVEL_NAMES, PILLARS, UNLOCK_SHARE, type Pillar } from './criteria';

/** The spec's Readiness report; optional fields are absent rather than null. */
export type ReadinessReportView = ApiSchema<'ReadinessReport'>;

export function toReportView(row: ReadinessReportEntity): ReadinessReportView {
  return {
    reportId: row.id,
    createdAt: row.createdAt.getTime(),
    repoUrl: row.repoUrl,
    apps: row.apps,
    report: row.report,
    ...(row.commitHash !== null ? { commitHash: row.commitHash } : {}),
    ...(row.branch !== null ? { branch: row.branch } : {}),
    ...(row.hasLocalChanges !== null ? { hasLocalChanges: row.hasLocalChanges } : {}),
    ...(row.hasNonRemoteCommits !== null ? { hasNonRemoteCommits: row.hasNonRemoteCommits } : {}),
    ...(row.modelUsed !== null ? { modelUsed: row.modelUsed } : {}),
    ...(row.agentVersion !== null ? { agentVersion: row.agentVersion } : {}),
  };
}

export type RepositoryView = ApiSchema<'ReadinessRepository'>;

/** The criteria catalogue, as the console shows a report: every criterion with its pillar, level and scope. */
export type CriteriaCatalogueView = ApiSchema<'ReadinessCriteria'>;

export function criteriaCatalogue(): CriteriaCatalogueView {
  return {
    levels: LEVEL_NAMES.map((name, i) => ({ level: i + 1, name })),
    unlockShare: UNLOCK_SHARE,
    pillars: (Object.keys(PILLARS) as Pillar[]).map((id) => ({ id, name: PILLARS[id] })),
    criteria: CRITERIA.map(({ id, title, pillar, level, scope }) => ({ id, title, pillar, level, scope })),
  };
}

/** One point of a repository's level over time: a report and the level it gave. */
export type LevelPointView = ApiSchema<'ReadinessLevelHistory'>['levels'][number];

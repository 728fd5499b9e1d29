import { ReadinessReportEntity } from '../entities';
import { CRITERIA, LEVEL_NAMES, PILLARS, UNLOCK_SHARE, type CriterionScope, type Evaluation, type Pillar } from './criteria';

/** The spec's Readiness report; optional fields are absent rather than null. */
export interface ReadinessReportView {
  reportId: string;
  createdAt: number;
  repoUrl: string;
  apps: Record<string, { description: string }>;
  report: Record<string, Evaluation>;
  commitHash?: string;
  branch?: string;
  hasLocalChanges?: boolean;
  hasNonRemoteCommits?: boolean;
  modelUsed?: { id: string; reasoningEffort: string };
  agentVersion?: string;
}

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

export interface RepositoryView {
  repoId: string;
  repoUrl: string;
  reports: number;
  latestReportId: string;
  latestCreatedAt: number;
  level: number;
}

/** The criteria catalogue, as the console shows a report: every criterion with its pillar, level and scope. */
export interface CriteriaCatalogueView {
  levels: { level: number; name: string }[];
  unlockShare: number;
  pillars: { id: Pillar; name: string }[];
  criteria: { id: string; title: string; pillar: Pillar; level: number; scope: CriterionScope }[];
}

export function criteriaCatalogue(): CriteriaCatalogueView {
  return {
    levels: LEVEL_NAMES.map((name, i) => ({ level: i + 1, name })),
    unlockShare: UNLOCK_SHARE,
    pillars: (Object.keys(PILLARS) as Pillar[]).map((id) => ({ id, name: PILLARS[id] })),
    criteria: CRITERIA.map(({ id, title, pillar, level, scope }) => ({ id, title, pillar, level, scope })),
  };
}

/** One point of a repository's level over time: a report and the level it gave. */
export interface LevelPointView {
  reportId: string;
  createdAt: number;
  level: number;
}

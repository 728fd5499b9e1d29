import { ReadinessReportEntity } from '../entities';
import type { Evaluation } from './criteria';

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

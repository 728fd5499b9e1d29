import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Sql } from '../../platform/database/sql';
import { ReadinessReportEntity } from './entities';
import { LevelPointView, RepositoryView } from './domain/views';

/** A report row under its entity's property names. */
const REPORT_COLUMNS = `id, organization_id AS "organizationId", repo_id AS "repoId", repo_url AS "repoUrl", created_at AS "createdAt", apps, report,
  commit_hash AS "commitHash", branch, has_local_changes AS "hasLocalChanges", has_non_remote_commits AS "hasNonRemoteCommits",
  model_used AS "modelUsed", agent_version AS "agentVersion", level, uploaded_by AS "uploadedBy"`;

/** All SQL of the Readiness module. */
@Injectable()
export class ReadinessRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
  ) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  async insert(manager: EntityManager, row: ReadinessReportEntity): Promise<void> {
    await this.sql.in(manager).query(
      'readiness.insert',
      `INSERT INTO readiness_reports (id, organization_id, repo_id, repo_url, created_at, apps, report, commit_hash, branch,
         has_local_changes, has_non_remote_commits, model_used, agent_version, level, uploaded_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
      [
        row.id,
        row.organizationId,
        row.repoId,
        row.repoUrl,
        row.createdAt,
        JSON.stringify(row.apps),
        JSON.stringify(row.report),
        row.commitHash,
        row.branch,
        row.hasLocalChanges,
        row.hasNonRemoteCommits,
        row.modelUsed === null ? null : JSON.stringify(row.modelUsed),
        row.agentVersion,
        row.level,
        row.uploadedBy,
      ],
    );
  }

  /** Where a report sits in the newest-first order, if it is the organization's. */
  position(organizationId: string, reportId: string): Promise<{ createdAt: Date; id: string } | null> {
    return this.dataSource.manager
      .getRepository(ReadinessReportEntity)
      .findOne({ where: { organizationId, id: reportId }, select: { id: true, createdAt: true } });
  }

  /** Newest first (`createdAt`, then id), strictly after `after`. */
  list(organizationId: string, filter: { repoId?: string; after?: { createdAt: Date; id: string } }, limit: number): Promise<ReadinessReportEntity[]> {
    const values: unknown[] = [organizationId, limit];
    const conditions = ['organization_id = $1'];
    if (filter.repoId !== undefined) conditions.push(`repo_id = $${values.push(filter.repoId)}`);
    if (filter.after) conditions.push(`(created_at, id) < ($${values.push(filter.after.createdAt)}, $${values.push(filter.after.id)})`);
    return this.sql.query(
      `readiness.list${filter.repoId !== undefined ? '.repo' : ''}${filter.after ? '.after' : ''}`,
      `SELECT ${REPORT_COLUMNS} FROM readiness_reports WHERE ${conditions.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $2`,
      values,
    );
  }

  /** Each repository with reports: its latest report's URL, id, time and level, newest first. */
  async repositories(organizationId: string): Promise<RepositoryView[]> {
    const rows = await this.sql.query<{ repoId: string; repoUrl: string; reports: number; latestReportId: string; latestCreatedAt: Date; level: number }>(
      'readiness.repositories',
      `SELECT latest.repo_id AS "repoId", latest.repo_url AS "repoUrl", counts.reports, latest.id AS "latestReportId",
              latest.created_at AS "latestCreatedAt", latest.level
       FROM (
         SELECT DISTINCT ON (repo_id) repo_id, repo_url, id, created_at, level
         FROM readiness_reports WHERE organization_id = $1
         ORDER BY repo_id, created_at DESC, id DESC
       ) latest
       JOIN (SELECT repo_id, count(*)::int AS reports FROM readiness_reports WHERE organization_id = $1 GROUP BY repo_id) counts USING (repo_id)
       ORDER BY latest.created_at DESC, latest.id DESC`,
      [organizationId],
    );
    return rows.map((row) => ({ ...row, latestCreatedAt: new Date(row.latestCreatedAt).getTime(), level: Number(row.level) }));
  }

  /** A repository's newest `limit` reports' levels, oldest first. */
  async levels(organizationId: string, repoId: string, limit: number): Promise<LevelPointView[]> {
    const rows = await this.sql.query<{ id: string; created_at: Date; level: number }>(
      'readiness.levels',
      `SELECT id, created_at, level FROM readiness_reports WHERE organization_id = $1 AND repo_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3`,
      [organizationId, repoId, limit],
    );
    return rows.reverse().map((row) => ({ reportId: row.id, createdAt: new Date(row.created_at).getTime(), level: Number(row.level) }));
  }
}

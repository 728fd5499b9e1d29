import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ReadinessReportEntity } from './entities';
import { LevelPointView, RepositoryView } from './domain/views';

/** All SQL of the Readiness module. */
@Injectable()
export class ReadinessRepository {
  constructor(private readonly dataSource: DataSource) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  async insert(manager: EntityManager, row: ReadinessReportEntity): Promise<void> {
    await manager.query(
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
    const query = this.dataSource.manager
      .getRepository(ReadinessReportEntity)
      .createQueryBuilder('r')
      .where('r.organization_id = :organizationId', { organizationId });
    if (filter.repoId !== undefined) query.andWhere('r.repo_id = :repoId', { repoId: filter.repoId });
    if (filter.after) query.andWhere('(r.created_at, r.id) < (:createdAt, :id)', { createdAt: filter.after.createdAt, id: filter.after.id });
    return query.orderBy('r.created_at', 'DESC').addOrderBy('r.id', 'DESC').limit(limit).getMany();
  }

  /** Each repository with reports: its latest report's URL, id, time and level, newest first. */
  async repositories(organizationId: string): Promise<RepositoryView[]> {
    const rows: Array<{ repoId: string; repoUrl: string; reports: number; latestReportId: string; latestCreatedAt: Date; level: number }> =
      await this.dataSource.query(
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
    const rows: Array<{ id: string; created_at: Date; level: number }> = await this.dataSource.query(
      `SELECT id, created_at, level FROM readiness_reports WHERE organization_id = $1 AND repo_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3`,
      [organizationId, repoId, limit],
    );
    return rows.reverse().map((row) => ({ reportId: row.id, createdAt: new Date(row.created_at).getTime(), level: Number(row.level) }));
  }
}

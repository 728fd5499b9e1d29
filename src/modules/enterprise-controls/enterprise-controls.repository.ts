import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, LessThan } from 'typeorm';
import { AdvisoryLock } from '../../platform/database/advisory-locks';
import { ControlRevisionEntity } from './entities';

/** An organization that keeps sessions for a limited time. */
export interface RetentionPolicy {
  organizationId: string;
  days: number;
}

/** All SQL of the EnterpriseControls module. */
@Injectable()
export class EnterpriseControlsRepository {
  constructor(private readonly dataSource: DataSource) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /** Serializes changes to one organization's controls until the transaction ends. */
  async lockOrganization(manager: EntityManager, organizationId: string): Promise<void> {
    await manager.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [AdvisoryLock.EnterpriseControls, organizationId]);
  }

  latest(organizationId: string, manager: EntityManager = this.dataSource.manager): Promise<ControlRevisionEntity | null> {
    return manager.getRepository(ControlRevisionEntity).findOne({ where: { organizationId }, order: { revision: 'DESC' } });
  }

  find(organizationId: string, revision: number): Promise<ControlRevisionEntity | null> {
    return this.dataSource.manager.getRepository(ControlRevisionEntity).findOneBy({ organizationId, revision });
  }

  async insert(manager: EntityManager, row: ControlRevisionEntity): Promise<void> {
    await manager.query(
      `INSERT INTO enterprise_control_revisions (organization_id, revision, settings, diff, user_id, user_email, user_name, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [row.organizationId, row.revision, JSON.stringify(row.settings), JSON.stringify(row.diff), row.userId, row.userEmail, row.userName, row.createdAt],
    );
  }

  /** Newest first, after the revision a cursor names; `limit + 1` rows tell whether more follow. */
  history(organizationId: string, before: number | undefined, limit: number): Promise<ControlRevisionEntity[]> {
    return this.dataSource.manager.getRepository(ControlRevisionEntity).find({
      where: { organizationId, ...(before !== undefined ? { revision: LessThan(before) } : {}) },
      order: { revision: 'DESC' },
      take: limit + 1,
    });
  }

  /**
   * Revisions written before every custom-model secret was encrypted (they hold a plain `extraHeaders`
   * value or cloud credential), a batch at a time.
   */
  withPlainSecrets(limit: number): Promise<ControlRevisionEntity[]> {
    const plain = (path: string) => `jsonb_path_exists(settings::jsonb, '${path} ? (!(@ starts with "enc:v1:"))')`;
    return this.dataSource.manager
      .getRepository(ControlRevisionEntity)
      .createQueryBuilder('revision')
      .where(
        [
          plain('$.customModels[*].extraHeaders.*'),
          plain('$.customModels[*].cloudModelConfig.cloudAuthRefresh'),
          plain('$.customModels[*].cloudModelConfig.cloudCredentialExport'),
        ].join(' OR '),
      )
      .orderBy('revision.organization_id')
      .addOrderBy('revision.revision')
      .limit(limit)
      .getMany();
  }

  /** Replaces a revision's stored snapshot with the same settings, sealed differently. */
  async resealSettings(organizationId: string, revision: number, settings: ControlRevisionEntity['settings']): Promise<void> {
    await this.dataSource.query('UPDATE enterprise_control_revisions SET settings = $3 WHERE organization_id = $1 AND revision = $2', [
      organizationId,
      revision,
      JSON.stringify(settings),
    ]);
  }

  /** Every organization whose latest revision sets `sessionRetentionDays`. */
  async retentionPolicies(): Promise<RetentionPolicy[]> {
    const rows: Array<{ organizationId: string; days: number }> = await this.dataSource.query(`
      SELECT organization_id AS "organizationId", (settings->>'sessionRetentionDays')::int AS days
      FROM (
        SELECT DISTINCT ON (organization_id) organization_id, settings
        FROM enterprise_control_revisions
        ORDER BY organization_id, revision DESC
      ) latest
      WHERE settings->>'sessionRetentionDays' IS NOT NULL`);
    return rows;
  }
}

import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AdvisoryLock } from '../../platform/database/advisory-locks';
import { Sql } from '../../platform/database/sql';
import { ControlRevisionEntity } from './entities';

/** An organization that keeps sessions for a limited time. */
export interface RetentionPolicy {
  organizationId: string;
  days: number;
}

/** A revision row under its entity's property names. */
const REVISION_COLUMNS = `organization_id AS "organizationId", revision, settings, diff, user_id AS "userId", user_email AS "userEmail",
  user_name AS "userName", created_at AS "createdAt"`;

/** A custom model's secret still stored in the clear (not a SecretBox envelope) at a JSON path of the settings. */
const plainSecretAt = (path: string) => `jsonb_path_exists(settings::jsonb, '${path} ? (!(@ starts with "enc:v1:"))')`;

/** All SQL of the EnterpriseControls module. */
@Injectable()
export class EnterpriseControlsRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
  ) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /** Serializes changes to one organization's controls until the transaction ends. */
  async lockOrganization(manager: EntityManager, organizationId: string): Promise<void> {
    await this.sql
      .in(manager)
      .query('controls.lockOrganization', 'SELECT pg_advisory_xact_lock($1, hashtext($2))', [AdvisoryLock.EnterpriseControls, organizationId]);
  }

  latest(organizationId: string, manager: EntityManager = this.dataSource.manager): Promise<ControlRevisionEntity | null> {
    return manager.getRepository(ControlRevisionEntity).findOne({ where: { organizationId }, order: { revision: 'DESC' } });
  }

  find(organizationId: string, revision: number): Promise<ControlRevisionEntity | null> {
    return this.dataSource.manager.getRepository(ControlRevisionEntity).findOneBy({ organizationId, revision });
  }

  async insert(manager: EntityManager, row: ControlRevisionEntity): Promise<void> {
    await this.sql.in(manager).query(
      'controls.insert',
      `INSERT INTO enterprise_control_revisions (organization_id, revision, settings, diff, user_id, user_email, user_name, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [row.organizationId, row.revision, JSON.stringify(row.settings), JSON.stringify(row.diff), row.userId, row.userEmail, row.userName, row.createdAt],
    );
  }

  /** Newest first, after the revision a cursor names; `limit + 1` rows tell whether more follow. */
  history(organizationId: string, before: number | undefined, limit: number): Promise<ControlRevisionEntity[]> {
    return this.sql.query(
      `controls.history${before !== undefined ? '.before' : ''}`,
      `SELECT ${REVISION_COLUMNS} FROM enterprise_control_revisions WHERE organization_id = $1 ${before !== undefined ? 'AND revision < $3' : ''}
       ORDER BY revision DESC LIMIT $2`,
      before !== undefined ? [organizationId, limit + 1, before] : [organizationId, limit + 1],
    );
  }

  /**
   * Revisions written before every custom-model secret was encrypted (they hold a plain `extraHeaders`
   * value or cloud credential), a batch at a time.
   */
  withPlainSecrets(limit: number): Promise<ControlRevisionEntity[]> {
    return this.sql.query(
      'controls.withPlainSecrets',
      `SELECT ${REVISION_COLUMNS} FROM enterprise_control_revisions
       WHERE ${plainSecretAt('$.customModels[*].extraHeaders.*')}
          OR ${plainSecretAt('$.customModels[*].cloudModelConfig.cloudAuthRefresh')}
          OR ${plainSecretAt('$.customModels[*].cloudModelConfig.cloudCredentialExport')}
       ORDER BY organization_id, revision LIMIT $1`,
      [limit],
    );
  }

  /** Replaces a revision's stored snapshot with the same settings, sealed differently. */
  async resealSettings(organizationId: string, revision: number, settings: ControlRevisionEntity['settings']): Promise<void> {
    await this.sql.query('controls.resealSettings', 'UPDATE enterprise_control_revisions SET settings = $3 WHERE organization_id = $1 AND revision = $2', [
      organizationId,
      revision,
      JSON.stringify(settings),
    ]);
  }

  /** Every organization whose latest revision sets `sessionRetentionDays`. */
  retentionPolicies(): Promise<RetentionPolicy[]> {
    return this.sql.query(
      'controls.retentionPolicies',
      `SELECT organization_id AS "organizationId", (settings->>'sessionRetentionDays')::int AS days
       FROM (
         SELECT DISTINCT ON (organization_id) organization_id, settings
         FROM enterprise_control_revisions
         ORDER BY organization_id, revision DESC
       ) latest
       WHERE settings->>'sessionRetentionDays' IS NOT NULL`,
      [],
    );
  }
}

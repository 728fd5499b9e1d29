import { Injectable } from '@nestjs/common';
import { Sql } from '../../../platform/database/sql';
import type { StoredCatalog } from './plugin-catalog';

/** A catalog row under the names StoredCatalog gives its fields. */
const CATALOG_COLUMNS = `marketplace, url, computer_id AS "computerId", commit_sha AS "commitSha", plugins, error, reported_at AS "reportedAt"`;

/** All SQL of the plugin catalogs (table plugin_catalogs). */
@Injectable()
export class PluginCatalogRepository {
  constructor(private readonly sql: Sql) {}

  /** The organization's catalog of this marketplace becomes this one. */
  async replace(organizationId: string, catalog: StoredCatalog): Promise<void> {
    await this.sql.query(
      'pluginCatalogs.replace',
      `INSERT INTO plugin_catalogs (organization_id, marketplace, url, computer_id, commit_sha, plugins, error, reported_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (organization_id, marketplace) DO UPDATE SET url = EXCLUDED.url, computer_id = EXCLUDED.computer_id,
         commit_sha = EXCLUDED.commit_sha, plugins = EXCLUDED.plugins, error = EXCLUDED.error, reported_at = EXCLUDED.reported_at`,
      [
        organizationId,
        catalog.marketplace,
        catalog.url,
        catalog.computerId,
        catalog.commitSha,
        JSON.stringify(catalog.plugins),
        catalog.error,
        catalog.reportedAt,
      ],
    );
  }

  /** The organization's catalogs of these marketplaces (those it has). */
  of(organizationId: string, marketplaces: string[]): Promise<StoredCatalog[]> {
    return this.sql.query('pluginCatalogs.of', `SELECT ${CATALOG_COLUMNS} FROM plugin_catalogs WHERE organization_id = $1 AND marketplace = ANY($2::text[])`, [
      organizationId,
      marketplaces,
    ]);
  }
}

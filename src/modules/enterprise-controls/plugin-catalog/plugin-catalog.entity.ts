import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import type { CatalogPlugin } from './plugin-catalog';

/**
 * The latest catalog an agent of the organization reported of one of its marketplaces: the plugins its manifest
 * listed at a commit, or why the agent could not read it. One row per organization and marketplace name, replaced by
 * each report.
 */
@Entity({ name: 'plugin_catalogs' })
export class PluginCatalogEntity {
  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'plugin_catalogs_pkey' })
  @ForeignKey('OrganizationEntity', { name: 'plugin_catalogs_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId: string;

  @PrimaryColumn({ type: 'varchar', length: 256, primaryKeyConstraintName: 'plugin_catalogs_pkey' })
  marketplace: string;

  /** The marketplace's address (marketplaceUrl) when the report was taken: a catalog of an address since changed is not shown. */
  @Column({ type: 'text' })
  url: string;

  /** The computer whose agent reported it (kept as recorded, even once the computer is deleted). */
  @Column({ name: 'computer_id', type: 'uuid' })
  computerId: string;

  /** The commit read; null when the agent could not read the marketplace. */
  @Column({ name: 'commit_sha', type: 'varchar', length: 64, nullable: true })
  commitSha: string | null;

  /** `json`, not `jsonb`: the plugins keep the manifest's order, and their fields theirs. */
  @Column({ type: 'json' })
  plugins: CatalogPlugin[];

  /** Why the agent could not read it; null when it did. */
  @Column({ type: 'text', nullable: true })
  error: string | null;

  @Column({ name: 'reported_at', type: 'timestamptz', precision: 3 })
  reportedAt: Date;
}

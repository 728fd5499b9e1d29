import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import type { EnterpriseSettings } from '../domain/settings';
import type { PatchOperation } from '../domain/settings-diff';

/**
 * One revision of an organization's enterprise controls: the whole settings snapshot (custom
 * models' keys encrypted), what it changed, and who changed it. The latest revision is the
 * organization's controls, so writing a revision and applying it are one insert.
 */
@Entity({ name: 'enterprise_control_revisions' })
export class ControlRevisionEntity {
  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'enterprise_control_revisions_pkey' })
  @ForeignKey('OrganizationEntity', { name: 'enterprise_control_revisions_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId: string;

  /** 1, 2, 3, ... per organization, without gaps. */
  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'enterprise_control_revisions_pkey' })
  revision: number;

  /** The snapshot; `customModels[].apiKey` holds SecretBox envelopes. `json`, not `jsonb`: it keeps the fields in order. */
  @Column({ type: 'json' })
  settings: EnterpriseSettings;

  /** RFC 6902 operations from the previous revision (or the defaults), secrets masked. */
  @Column({ type: 'json' })
  diff: PatchOperation[];

  /** Who made the change, as they were then: kept as recorded even if the user is renamed or removed. */
  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @Column({ name: 'user_email', type: 'varchar', length: 320 })
  userEmail: string;

  @Column({ name: 'user_name', type: 'varchar', length: 200 })
  userName: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}

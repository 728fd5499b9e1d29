import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';

/** A group of worker machines of one organization that managed computers can be placed on. */
@Entity({ name: 'worker_pools' })
@Index('worker_pools_name_key', ['organizationId', 'name'], { unique: true })
@Index('worker_pools_organization_created_idx', ['organizationId', 'createdAt', 'id'])
export class WorkerPoolEntity {
  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'worker_pools_pkey' })
  @ForeignKey('OrganizationEntity', { name: 'worker_pools_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId: string;

  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'worker_pools_pkey' })
  id: string;

  @Column({ type: 'varchar', length: 63 })
  name: string;

  @Column({ type: 'varchar', length: 500, nullable: true })
  description: string | null;

  /** Who created it (null: the operator). */
  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}

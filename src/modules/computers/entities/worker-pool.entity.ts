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

  /** At most this many computers on any one worker of the pool, whatever capacity the worker reports (null: what it reports). */
  @Column({ name: 'max_computers_per_worker', type: 'integer', nullable: true })
  maxComputersPerWorker: number | null;

  /** Whether a worker that runs computers without the sandbox may register (off: it is refused). */
  @Column({ name: 'allow_unsandboxed', type: 'boolean', default: false })
  allowUnsandboxed: boolean;

  /** Who created it (null: the operator). */
  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}

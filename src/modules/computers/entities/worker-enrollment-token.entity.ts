import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';

/** A token a worker registers into its pool with; kept only as its SHA-256 hash, shown once at creation. */
@Entity({ name: 'worker_enrollment_tokens' })
@Index('worker_enrollment_tokens_pool_created_idx', ['organizationId', 'poolId', 'createdAt', 'id'])
@ForeignKey('WorkerPoolEntity', ['organizationId', 'poolId'], ['organizationId', 'id'], {
  name: 'worker_enrollment_tokens_pool_id_fkey',
  onDelete: 'CASCADE',
})
export class WorkerEnrollmentTokenEntity {
  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'worker_enrollment_tokens_pkey' })
  organizationId: string;

  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'worker_enrollment_tokens_pkey' })
  id: string;

  @Column({ name: 'pool_id', type: 'uuid' })
  poolId: string;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  /** The first characters of the token, enough to recognise it in a list. */
  @Column({ type: 'varchar', length: 16 })
  prefix: string;

  /** Found by hash alone: a worker presents it before the server knows its organization. */
  @Index('worker_enrollment_tokens_token_hash_key', { unique: true })
  @Column({ name: 'token_hash', type: 'varchar', length: 64 })
  tokenHash: string;

  /** Who created it (null: the operator). */
  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', precision: 3, nullable: true })
  lastUsedAt: Date | null;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3, nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', precision: 3, nullable: true })
  revokedAt: Date | null;
}

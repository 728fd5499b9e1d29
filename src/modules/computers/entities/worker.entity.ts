import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import type { WorkerCapacity, WorkerStatus, WorkerUsage } from '../workers/worker';

/**
 * A machine running `agent-platform worker`, registered into a pool with one of its enrollment tokens. It proves
 * itself on each call with its session token (kept as a SHA-256 hash) and keeps its lease with heartbeats.
 */
@Entity({ name: 'workers' })
@Index('workers_pool_registered_idx', ['organizationId', 'poolId', 'registeredAt', 'id'])
@Index('workers_lease_idx', ['leaseExpiresAt'], { where: `"status" = 'online'` })
@ForeignKey('WorkerPoolEntity', ['organizationId', 'poolId'], ['organizationId', 'id'], { name: 'workers_pool_id_fkey', onDelete: 'CASCADE' })
@ForeignKey('WorkerEnrollmentTokenEntity', ['organizationId', 'enrollmentTokenId'], ['organizationId', 'id'], {
  name: 'workers_enrollment_token_id_fkey',
  onDelete: 'CASCADE',
})
export class WorkerEntity {
  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'workers_pkey' })
  organizationId: string;

  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'workers_pkey' })
  id: string;

  @Column({ name: 'pool_id', type: 'uuid' })
  poolId: string;

  /** The token it registered with: revoking the token ends the worker's session too. */
  @Column({ name: 'enrollment_token_id', type: 'uuid' })
  enrollmentTokenId: string;

  @Column({ type: 'varchar', length: 63 })
  name: string;

  @Column({ type: 'varchar', length: 253 })
  hostname: string;

  @Column({ type: 'jsonb', default: [] })
  labels: string[];

  /** What it said it can hold when it registered, the pool's cap applied to `computers`. */
  @Column({ type: 'jsonb' })
  capacity: WorkerCapacity;

  /** What its last heartbeat reported. */
  @Column({ type: 'jsonb', nullable: true })
  usage: WorkerUsage | null;

  @Column({ type: 'boolean' })
  sandboxed: boolean;

  @Column({ type: 'varchar', length: 64 })
  version: string;

  /** Found by hash alone: every call of the worker presents its session token, which tells the organization. */
  @Index('workers_session_hash_key', { unique: true })
  @Column({ name: 'session_hash', type: 'varchar', length: 64 })
  sessionHash: string;

  @Column({ type: 'varchar', length: 16 })
  status: WorkerStatus;

  @Column({ name: 'registered_at', type: 'timestamptz', precision: 3 })
  registeredAt: Date;

  @Column({ name: 'last_seen_at', type: 'timestamptz', precision: 3 })
  lastSeenAt: Date;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', precision: 3 })
  leaseExpiresAt: Date;

  @Column({ name: 'ended_at', type: 'timestamptz', precision: 3, nullable: true })
  endedAt: Date | null;
}

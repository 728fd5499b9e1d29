import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { ComputerStatus } from '../domain/computer-status';
import { ComputerSource, OwnerPrincipalKind, Provider } from '../domain/computer';

/** A machine that hosts an agent: a registered BYOM machine or one a provider prepares. */
@Entity({ name: 'computers' })
@Index('computers_organization_created_idx', ['organizationId', 'createdAt', 'id'])
@Index('computers_owner_created_idx', ['ownerId', 'createdAt', 'id'])
@Index('computers_worker_idx', ['organizationId', 'workerId'], { where: `"worker_id" IS NOT NULL` })
@Index('computers_unplaced_idx', ['organizationId', 'createdAt'], { where: `"on_workers" AND "worker_id" IS NULL AND "status" = 'provisioning'` })
@ForeignKey('UserEntity', ['organizationId', 'ownerId'], ['organizationId', 'id'], { name: 'computers_owner_id_fkey', onDelete: 'CASCADE' })
@ForeignKey('WorkerPoolEntity', ['organizationId', 'poolId'], ['organizationId', 'id'], { name: 'computers_pool_id_fkey', onDelete: 'RESTRICT' })
@ForeignKey('WorkerEntity', ['organizationId', 'workerId'], ['organizationId', 'id'], { name: 'computers_worker_id_fkey', onDelete: 'SET NULL' })
export class ComputerEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'computers_pkey' })
  id: string;

  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'computers_pkey' })
  @ForeignKey('OrganizationEntity', { name: 'computers_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId: string;

  /** The user the computer belongs to: its creator, or the service account it was created for. */
  @Column({ name: 'owner_id', type: 'uuid' })
  ownerId: string;

  @Column({ name: 'owner_principal_kind', type: 'varchar', length: 16 })
  ownerPrincipalKind: OwnerPrincipalKind;

  @Column({ type: 'varchar', length: 63 })
  name: string;

  /** `byom` or a managed provider's type. */
  @Column({ type: 'varchar', length: 32 })
  provider: Provider;

  @Column({ name: 'host_id', type: 'uuid', nullable: true })
  hostId: string | null;

  @Column({ name: 'remote_user', type: 'varchar', length: 63, nullable: true })
  remoteUser: string | null;

  /** Reported by the computer's agent when it connects. */
  @Column({ type: 'varchar', length: 253, nullable: true })
  hostname: string | null;

  @Column({ type: 'jsonb', default: [] })
  repos: string[];

  @Column({ name: 'auto_install_deps', type: 'boolean', default: false })
  autoInstallDeps: boolean;

  @Column({ type: 'jsonb', nullable: true })
  source: ComputerSource | null;

  @Column({ type: 'varchar', length: 16 })
  status: ComputerStatus;

  @Column({ name: 'cloned_repo_directories', type: 'jsonb', default: [] })
  clonedRepoDirectories: string[];

  /** SHA-256 of the agent token; the token itself is shown once, at creation or rotation. */
  @Index('computers_agent_token_hash_key', { unique: true })
  @Column({ name: 'agent_token_hash', type: 'varchar', length: 64 })
  agentTokenHash: string;

  /**
   * The agent token itself, encrypted (a SecretBox envelope bound to the computer), for managed
   * `local` computers only: the server starts their agent with it. Never answered or logged.
   */
  @Column({ name: 'agent_token_encrypted', type: 'text', nullable: true })
  agentTokenEncrypted: string | null;

  @Column({ name: 'agent_token_created_at', type: 'timestamptz', precision: 3 })
  agentTokenCreatedAt: Date;

  /** When the agent last connected through the agent channel's connect call. */
  @Column({ name: 'agent_connected_at', type: 'timestamptz', precision: 3, nullable: true })
  agentConnectedAt: Date | null;

  /** Runs on a worker of a pool (`poolId`, or any of the organization's when null), not on the server's host. */
  @Column({ name: 'on_workers', type: 'boolean', default: false })
  onWorkers: boolean;

  @Column({ name: 'pool_id', type: 'uuid', nullable: true })
  poolId: string | null;

  /** Labels its worker must have, each of them. */
  @Column({ name: 'placement_labels', type: 'jsonb', default: [] })
  placementLabels: string[];

  /** The worker it is placed on; null while it waits for one (or runs on the server). */
  @Column({ name: 'worker_id', type: 'uuid', nullable: true })
  workerId: string | null;

  @Column({ name: 'placed_at', type: 'timestamptz', precision: 3, nullable: true })
  placedAt: Date | null;

  /** Since when it waits for a worker with room (the placement timeout counts from here). */
  @Column({ name: 'waiting_since', type: 'timestamptz', precision: 3, nullable: true })
  waitingSince: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}

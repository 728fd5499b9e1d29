import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import type { EventActor } from '../../../platform/events';
import { SessionStatus } from '../domain/session-status';
import { StoredSessionSettings } from '../domain/session-settings';

/**
 * A session: a conversation between users and an agent. Besides the spec's fields it holds the
 * work queue state: which user messages an agent has taken, where the waiting work is routed,
 * and the lease of the agent turn in progress.
 */
@Entity({ name: 'sessions' })
@Index('sessions_organization_created_idx', ['organizationId', 'createdAt', 'id'])
@Index('sessions_owner_created_idx', ['ownerId', 'createdAt', 'id'])
@Index('sessions_computer_created_idx', ['computerId', 'createdAt', 'id'], { where: 'computer_id IS NOT NULL' })
@Index('sessions_waiting_work_idx', ['organizationId', 'workComputerId', 'pendingSince'], { where: `status = 'pending'` })
@Index('sessions_turn_lease_idx', ['leaseExpiresAt'], { where: `status = 'running'` })
@Index('sessions_work_computer_idx', ['workComputerId'], { where: 'work_computer_id IS NOT NULL' })
@ForeignKey('UserEntity', ['organizationId', 'ownerId'], ['organizationId', 'id'], { name: 'sessions_owner_id_fkey', onDelete: 'CASCADE' })
// The keys to computers null only their own column (ON DELETE SET NULL (computer_id)): organization_id is NOT NULL.
@ForeignKey('ComputerEntity', ['organizationId', 'computerId'], ['organizationId', 'id'], { name: 'sessions_computer_id_fkey', onDelete: 'SET NULL' })
@ForeignKey('ComputerEntity', ['organizationId', 'workComputerId'], ['organizationId', 'id'], {
  name: 'sessions_work_computer_id_fkey',
  onDelete: 'SET NULL',
})
export class SessionEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'sessions_pkey' })
  id: string;

  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'sessions_pkey' })
  @ForeignKey('OrganizationEntity', { name: 'sessions_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId: string;

  /** The user who created the session. */
  @Column({ name: 'owner_id', type: 'uuid' })
  ownerId: string;

  /** Deleting the computer disconnects the session (the Computers migration adds the key). */
  @Column({ name: 'computer_id', type: 'uuid', nullable: true })
  computerId: string | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  title: string | null;

  @Column({ type: 'varchar', length: 16, default: SessionStatus.Idle })
  status: SessionStatus;

  @Column({ name: 'message_count', type: 'integer', default: 0 })
  messageCount: number;

  /** The newest message, parent of the next one (the conversation is a chain). */
  @Column({ name: 'last_message_id', type: 'uuid', nullable: true })
  lastMessageId: string | null;

  /** `seq` of the newest user message. */
  @Column({ name: 'last_user_seq', type: 'integer', default: 0 })
  lastUserSeq: number;

  /** `seq` of the newest user message an agent has taken; work waits while it trails lastUserSeq. */
  @Column({ name: 'claimed_seq', type: 'integer', default: 0 })
  claimedSeq: number;

  /** Where the waiting work is routed: a computer, or null for the organization's unrouted queue. */
  @Column({ name: 'work_computer_id', type: 'uuid', nullable: true })
  workComputerId: string | null;

  /** When the oldest waiting work arrived: agents take work oldest first. */
  @Column({ name: 'pending_since', type: 'timestamptz', precision: 3, nullable: true })
  pendingSince: Date | null;

  /** claimedSeq before the running turn took its work: the turn's work is the user messages after it. */
  @Column({ name: 'turn_base_seq', type: 'integer', default: 0 })
  turnBaseSeq: number;

  @Column({ name: 'turn_id', type: 'uuid', nullable: true })
  turnId: string | null;

  /** The computer whose queue the running turn was taken from: its agent token may finish the turn. */
  @Column({ name: 'turn_computer_id', type: 'uuid', nullable: true })
  turnComputerId: string | null;

  /** A running turn whose lease passes without a sign of life is given to another agent. */
  @Column({ name: 'lease_expires_at', type: 'timestamptz', precision: 3, nullable: true })
  leaseExpiresAt: Date | null;

  /** When a user interrupted the running turn (null: it runs on); cleared when the turn ends. */
  @Column({ name: 'turn_interrupted_at', type: 'timestamptz', precision: 3, nullable: true })
  turnInterruptedAt: Date | null;

  /** Who interrupted it (the event log's actor). */
  @Column({ name: 'turn_interrupted_by', type: 'jsonb', nullable: true })
  turnInterruptedBy: EventActor | null;

  /** Tool calls of the session waiting for a person's decision. */
  @Column({ name: 'pending_tool_approvals', type: 'integer', default: 0 })
  pendingToolApprovals: number;

  @Column({ type: 'jsonb', default: {} })
  settings: StoredSessionSettings;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;

  @Column({ name: 'completed_at', type: 'timestamptz', precision: 3, nullable: true })
  completedAt: Date | null;
}

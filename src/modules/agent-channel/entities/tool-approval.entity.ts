import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import type { EventActor } from '../../../platform/events';
import type { ToolApprovalStatus } from '../../sessions';

/**
 * An agent's request that a person approve one tool call before it runs, and the answer: allowed
 * or denied by a user of the session, expired (nobody answered in time: denied), or cancelled (the
 * turn ended or was interrupted first).
 */
@Entity({ name: 'tool_approvals' })
@Index('tool_approvals_session_idx', ['sessionId', 'requestedAt'])
@Index('tool_approvals_pending_expiry_idx', ['expiresAt'], { where: `status = 'pending'` })
@ForeignKey('SessionEntity', ['organizationId', 'sessionId'], ['organizationId', 'id'], { name: 'tool_approvals_session_id_fkey', onDelete: 'CASCADE' })
export class ToolApprovalEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'tool_approvals_pkey' })
  id: string;

  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'tool_approvals_pkey' })
  organizationId: string;

  @Column({ name: 'session_id', type: 'uuid' })
  sessionId: string;

  /** The turn that asked: its end cancels what is still pending. */
  @Column({ name: 'turn_id', type: 'uuid' })
  turnId: string;

  @Column({ name: 'tool_name', type: 'varchar', length: 128 })
  toolName: string;

  @Column({ name: 'tool_call_id', type: 'varchar', length: 256, nullable: true })
  toolCallId: string | null;

  /** What the call does, in one line a person can judge (the command line, for a command). */
  @Column({ type: 'varchar', length: 2000 })
  summary: string;

  @Column({ type: 'jsonb' })
  input: Record<string, unknown>;

  @Column({ type: 'varchar', length: 16 })
  status: ToolApprovalStatus;

  /** The person's words with the decision (given to the model with a denial). */
  @Column({ type: 'varchar', length: 4000, nullable: true })
  message: string | null;

  @Column({ name: 'requested_at', type: 'timestamptz', precision: 3 })
  requestedAt: Date;

  /** Unanswered by then, the call is denied. */
  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;

  @Column({ name: 'resolved_at', type: 'timestamptz', precision: 3, nullable: true })
  resolvedAt: Date | null;

  @Column({ name: 'resolved_by', type: 'jsonb', nullable: true })
  resolvedBy: EventActor | null;
}

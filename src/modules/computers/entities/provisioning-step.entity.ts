import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { StepId, StepStatus } from '../domain/provisioning-step';

/**
 * One provisioning step of a managed computer, and the queue entry the scheduler claims: a
 * running step is held by one instance's claim (`claimId`) until `leaseExpiresAt`.
 */
@Entity({ name: 'provisioning_steps' })
@Index('provisioning_steps_claimable_idx', ['status', 'leaseExpiresAt'], { where: `status IN ('pending', 'running')` })
@ForeignKey('ComputerEntity', ['organizationId', 'computerId'], ['organizationId', 'id'], { name: 'provisioning_steps_computer_id_fkey', onDelete: 'CASCADE' })
@ForeignKey('SessionEntity', ['organizationId', 'installSessionId'], ['organizationId', 'id'], {
  name: 'provisioning_steps_install_session_id_fkey',
  onDelete: 'SET NULL',
})
export class ProvisioningStepEntity {
  /** The computer's organization: the key every tenant table is led by (sharding by organization). */
  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'provisioning_steps_pkey' })
  organizationId: string;

  @PrimaryColumn({ name: 'computer_id', type: 'uuid', primaryKeyConstraintName: 'provisioning_steps_pkey' })
  computerId: string;

  /** Order of the steps within the computer, from 0. */
  @PrimaryColumn({ type: 'smallint', primaryKeyConstraintName: 'provisioning_steps_pkey' })
  position: number;

  @Column({ name: 'step_id', type: 'varchar', length: 32 })
  stepId: StepId;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({ type: 'varchar', length: 16 })
  status: StepStatus;

  @Column({ type: 'text', nullable: true })
  error: string | null;

  @Column({ name: 'started_at', type: 'timestamptz', precision: 3, nullable: true })
  startedAt: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', precision: 3, nullable: true })
  completedAt: Date | null;

  /** The session that records this step's commands and output. */
  @Column({ name: 'install_session_id', type: 'uuid', nullable: true })
  installSessionId: string | null;

  /** Claims so far (a takeover after a crash is one more). */
  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ name: 'claim_id', type: 'uuid', nullable: true })
  claimId: string | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', precision: 3, nullable: true })
  leaseExpiresAt: Date | null;
}

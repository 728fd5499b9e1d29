import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * When an agent last asked for work in one queue of an organization (see AgentPresence). No
 * foreign keys: a row outliving its computer or user only says an agent was there once.
 */
@Entity({ name: 'agent_presence' })
export class AgentPresenceEntity {
  @PrimaryColumn('uuid', { name: 'organization_id', primaryKeyConstraintName: 'agent_presence_pkey' })
  organizationId: string;

  /** `<computerId or empty>|<ownerId or empty>`. */
  @PrimaryColumn('varchar', { length: 80, primaryKeyConstraintName: 'agent_presence_pkey' })
  queue: string;

  @Column('uuid', { name: 'computer_id', nullable: true })
  computerId: string | null;

  @Column('uuid', { name: 'owner_id', nullable: true })
  ownerId: string | null;

  @Column({ name: 'seen_at', type: 'timestamptz', precision: 3 })
  seenAt: Date;
}

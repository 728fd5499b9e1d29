import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** One user's rolled-up day: the users endpoint's row (without user and date), and what activity needs. */
@Entity({ name: 'analytics_user_days' })
@Index('analytics_user_days_organization_user_idx', ['organizationId', 'userId', 'day'])
export class AnalyticsUserDayEntity {
  @PrimaryColumn('uuid', { name: 'organization_id', primaryKeyConstraintName: 'analytics_user_days_pkey' })
  organizationId: string;

  @PrimaryColumn('date', { primaryKeyConstraintName: 'analytics_user_days_pkey' })
  day: string;

  @PrimaryColumn('uuid', { name: 'user_id', primaryKeyConstraintName: 'analytics_user_days_pkey' })
  userId: string;

  @Column({ type: 'jsonb' })
  metrics: Record<string, unknown>;

  /** Sent at least one user message that day (counts in the active users). */
  @Column({ type: 'boolean' })
  active: boolean;

  /** The client types the user's messages came from that day. */
  @Column({ type: 'jsonb' })
  clients: string[];
}

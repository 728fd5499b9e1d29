import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One organization's rolled-up day: the tools, activity and productivity rows as served (without dates), and the tokens row. */
@Entity({ name: 'analytics_days' })
export class AnalyticsDayEntity {
  @PrimaryColumn('uuid', { name: 'organization_id', primaryKeyConstraintName: 'analytics_days_pkey' })
  organizationId: string;

  @PrimaryColumn('date', { primaryKeyConstraintName: 'analytics_days_pkey' })
  day: string;

  @Column({ type: 'jsonb' })
  tools: Record<string, unknown>;

  /** Sessions and messages; the active-user counts are computed from the user days when read. */
  @Column({ type: 'jsonb' })
  activity: Record<string, unknown>;

  @Column({ type: 'jsonb' })
  productivity: Record<string, unknown>;

  /** The tokens endpoint's row of the day (with its date) as the JSON text it serves; null until the day's next rollup. */
  @Column({ type: 'text', nullable: true })
  tokens: string | null;

  @Column({ name: 'rolled_up_at', type: 'timestamptz', precision: 3 })
  rolledUpAt: Date;
}

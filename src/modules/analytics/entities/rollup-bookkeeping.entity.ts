import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A day with facts the rollup has not folded in yet (new, or late for a day already rolled up). */
@Entity({ name: 'analytics_dirty_days' })
export class AnalyticsDirtyDayEntity {
  @PrimaryColumn('uuid', { name: 'organization_id', primaryKeyConstraintName: 'analytics_dirty_days_pkey' })
  organizationId: string;

  @PrimaryColumn('date', { primaryKeyConstraintName: 'analytics_dirty_days_pkey' })
  day: string;
}

/**
 * How far the rollup has looked: every fact written by a transaction older than `watermark` (a
 * transaction id), or visible in the snapshot `seen` (the last look's, as text), has had its day marked dirty. One row.
 */
@Entity({ name: 'analytics_rollup_state' })
export class AnalyticsRollupStateEntity {
  @PrimaryColumn('smallint', { primaryKeyConstraintName: 'analytics_rollup_state_pkey' })
  id: number;

  @Column({ type: 'bigint' })
  watermark: string;

  @Column({ type: 'text', nullable: true })
  seen: string | null;
}

import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The share of one client's budget for one window that instances have taken so far. Instances
 * take it in blocks, so the database is asked once a block, not once a request; `used` never
 * passes the limit by more than the block that found it spent (and that block is not granted).
 */
@Entity({ name: 'rate_limit_windows' })
@Index('rate_limit_windows_window_start_idx', ['windowStart'])
export class RateLimitWindowEntity {
  /** The policy and the client: `credential:<id>`, `organization:<id>`, `anonymous:<address>`. */
  @PrimaryColumn('varchar', { length: 200, primaryKeyConstraintName: 'rate_limit_windows_pkey' })
  key: string;

  @PrimaryColumn('timestamptz', { name: 'window_start', precision: 3, primaryKeyConstraintName: 'rate_limit_windows_pkey' })
  windowStart: Date;

  @Column({ type: 'integer' })
  used: number;
}

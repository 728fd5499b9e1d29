import { Column, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One thing that happened on the platform (a session started, a message, a tool call, a hook run,
 * a file written, a commit, a usage report), stored in the same transaction as the activity.
 * Append-only; `txid` is the writing transaction's id, so the rollup can find facts it has not seen.
 */
@Entity({ name: 'analytics_facts' })
@Index('analytics_facts_organization_day_idx', ['organizationId', 'day'])
@Index('analytics_facts_txid_idx', ['txid'])
export class AnalyticsFactEntity {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS', primaryKeyConstraintName: 'analytics_facts_pkey' })
  id: string;

  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'analytics_facts_pkey' })
  organizationId: string;

  /** The UTC day it happened. */
  @Column({ type: 'date' })
  day: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @Column({ name: 'session_id', type: 'uuid', nullable: true })
  sessionId: string | null;

  @Column({ type: 'varchar', length: 24 })
  kind: string;

  /** User messages: the client type. */
  @Column({ type: 'varchar', length: 24, nullable: true })
  client: string | null;

  /** User messages: the delegation level; tool calls: the autonomy level. */
  @Column({ type: 'varchar', length: 16, nullable: true })
  level: string | null;

  /** Tool, skill, slash command, hook event, file extension or model. */
  @Column({ type: 'text', nullable: true })
  name: string | null;

  /** MCP server of a tool call, hook matcher, or language of a file. */
  @Column({ type: 'text', nullable: true })
  detail: string | null;

  /** A hook's command. */
  @Column({ type: 'text', nullable: true })
  command: string | null;

  @Column({ type: 'bigint' })
  txid: string;
}

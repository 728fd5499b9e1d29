import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintToNumber } from '../../../platform/database/column-transformers';

/** Tokens used per organization, UTC day, user (the session's owner) and model: the analytics source. */
@Entity({ name: 'token_usage_daily' })
export class TokenUsageDailyEntity {
  @PrimaryColumn('uuid', { name: 'organization_id', primaryKeyConstraintName: 'token_usage_daily_pkey' })
  organizationId: string;

  @PrimaryColumn('date', { primaryKeyConstraintName: 'token_usage_daily_pkey' })
  day: string;

  @PrimaryColumn('uuid', { name: 'user_id', primaryKeyConstraintName: 'token_usage_daily_pkey' })
  userId: string;

  @PrimaryColumn('varchar', { length: 200, primaryKeyConstraintName: 'token_usage_daily_pkey' })
  model: string;

  @Column({ name: 'input_tokens', type: 'bigint', default: 0, transformer: bigintToNumber })
  inputTokens: number;

  @Column({ name: 'output_tokens', type: 'bigint', default: 0, transformer: bigintToNumber })
  outputTokens: number;

  @Column({ name: 'cache_creation_tokens', type: 'bigint', default: 0, transformer: bigintToNumber })
  cacheCreationTokens: number;

  @Column({ name: 'cache_read_tokens', type: 'bigint', default: 0, transformer: bigintToNumber })
  cacheReadTokens: number;

  @Column({ name: 'thinking_tokens', type: 'bigint', default: 0, transformer: bigintToNumber })
  thinkingTokens: number;
}

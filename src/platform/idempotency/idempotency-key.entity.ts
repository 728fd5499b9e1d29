import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * A POST that carried an `Idempotency-Key`: written in the same transaction as the work it did,
 * so a stored key always means "done, and this was the answer".
 */
@Entity({ name: 'idempotency_keys' })
@Index('idempotency_keys_created_idx', ['createdAt'])
export class IdempotencyKeyEntity {
  @PrimaryColumn('uuid', { name: 'organization_id', primaryKeyConstraintName: 'idempotency_keys_pkey' })
  organizationId: string;

  /** The user's id, or the computer's when its agent token made the request. */
  @PrimaryColumn('uuid', { name: 'user_id', primaryKeyConstraintName: 'idempotency_keys_pkey' })
  userId: string;

  @PrimaryColumn('varchar', { length: 255, primaryKeyConstraintName: 'idempotency_keys_pkey' })
  key: string;

  /** SHA-256 of method, route and body: the same key with another request is refused. */
  @Column({ name: 'request_hash', type: 'varchar', length: 64 })
  requestHash: string;

  @Column({ name: 'status_code', type: 'integer' })
  statusCode: number;

  @Column({ type: 'jsonb' })
  response: unknown;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}

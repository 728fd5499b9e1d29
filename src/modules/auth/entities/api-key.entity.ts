import { Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';

/** An API key is kept only as its SHA-256 hash; the key itself is shown once, at creation. */
@Entity({ name: 'api_keys' })
@Index('api_keys_user_created_idx', ['userId', 'createdAt', 'id'])
@Index('api_keys_organization_created_idx', ['organizationId', 'createdAt', 'id'])
/** The operator revokes a key by id alone (`key:revoke`), before knowing its organization. */
@Index('api_keys_id_idx', ['id'])
@ForeignKey('UserEntity', ['organizationId', 'userId'], ['organizationId', 'id'], { name: 'api_keys_user_id_fkey', onDelete: 'CASCADE' })
export class ApiKeyEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'api_keys_pkey' })
  id: string;

  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'api_keys_pkey' })
  organizationId: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  /** The first characters of the key, enough to recognise it in a list. */
  @Column({ type: 'varchar', length: 16 })
  prefix: string;

  @Index('api_keys_key_hash_key', { unique: true })
  @Column({ name: 'key_hash', type: 'varchar', length: 64 })
  keyHash: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', precision: 3, nullable: true })
  lastUsedAt: Date | null;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3, nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', precision: 3, nullable: true })
  revokedAt: Date | null;
}

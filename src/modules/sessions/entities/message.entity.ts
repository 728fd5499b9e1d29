import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { ContentBlock, MessageAttributes, MessageRole, UserMessageSource } from '../domain/message';

/**
 * One message of a session. `seq` is its place in the conversation (1, 2, 3, ...), given under
 * the session's row lock, so order is total and `messageCount` exact under concurrent writers.
 * The spec's optional fields other than parentId and userMessageSource live in `attributes`.
 */
@Entity({ name: 'messages' })
@Index('messages_session_seq_key', ['sessionId', 'seq', 'organizationId'], { unique: true })
@Index('messages_session_role_seq_idx', ['sessionId', 'role', 'seq', 'organizationId'])
@ForeignKey('SessionEntity', ['organizationId', 'sessionId'], ['organizationId', 'id'], { name: 'messages_session_id_fkey', onDelete: 'CASCADE' })
export class MessageEntity {
  /** The session's organization: the key every tenant table is led by (sharding by organization). */
  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'messages_pkey' })
  organizationId: string;

  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'messages_pkey' })
  id: string;

  @Column({ name: 'session_id', type: 'uuid' })
  sessionId: string;

  @Column({ type: 'integer' })
  seq: number;

  @Column({ type: 'varchar', length: 16 })
  role: MessageRole;

  @Column({ name: 'parent_id', type: 'uuid', nullable: true })
  parentId: string | null;

  @Column({ name: 'user_message_source', type: 'varchar', length: 40, nullable: true })
  userMessageSource: UserMessageSource | null;

  /** The user who wrote a user message; null for agent messages. */
  @Column({ name: 'author_id', type: 'uuid', nullable: true })
  authorId: string | null;

  @Column({ type: 'jsonb' })
  content: ContentBlock[];

  @Column({ type: 'jsonb', default: {} })
  attributes: MessageAttributes;

  /** Bytes of `content` and `attributes` as JSON text, kept by the `messages_size` trigger (pages are cut by it). */
  @Column({ name: 'size_bytes', type: 'integer', default: 0, select: false, insert: false, update: false })
  sizeBytes?: number;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}

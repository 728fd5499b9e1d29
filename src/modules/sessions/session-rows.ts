import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { RowShape } from '../../platform/database/row-shape';
import { MessageEntity, SessionEntity } from './entities';
import { SessionStatus } from './domain/session-status';

/** Only what a Session view shows: lists read 21 rows per page, so every column counts. */
const SUMMARY_FIELDS = [
  'id',
  'status',
  'messageCount',
  'title',
  'computerId',
  'settings',
  'createdAt',
  'updatedAt',
  'completedAt',
  'ownerId',
  'workComputerId',
  'turnInterruptedAt',
  'pendingToolApprovals',
] as const;

/** The whole session: the view's fields, its organization and the work queue's state. */
const SESSION_FIELDS = [
  ...SUMMARY_FIELDS,
  'organizationId',
  'lastMessageId',
  'lastUserSeq',
  'claimedSeq',
  'pendingSince',
  'turnBaseSeq',
  'turnId',
  'turnComputerId',
  'leaseExpiresAt',
  'turnInterruptedBy',
] as const;

/** What a Message view shows, and its seq for the cursor. */
const MESSAGE_VIEW_FIELDS = ['id', 'seq', 'role', 'parentId', 'userMessageSource', 'content', 'attributes', 'createdAt', 'updatedAt'] as const;
const MESSAGE_FIELDS = [...MESSAGE_VIEW_FIELDS, 'sessionId', 'authorId'] as const;

/** A session as lists show it. */
export type SessionSummary = Pick<SessionEntity, (typeof SUMMARY_FIELDS)[number]>;
/** A message as lists show it. */
export type MessageSummary = Pick<MessageEntity, (typeof MESSAGE_VIEW_FIELDS)[number]>;

/** A message as a turn's work reads it. */
export type StoredMessage = Pick<MessageEntity, (typeof MESSAGE_FIELDS)[number]>;

/** A session's key: its organization leads it (see the TenantKeys migration), so every statement on one session names both. */
export type SessionKey = Pick<SessionEntity, 'organizationId' | 'id'>;

/** A session row changed under its lock, with the status it had before. */
export interface SessionChange {
  session: SessionEntity;
  previousStatus: SessionStatus;
  /** The newest message before this change (the parent of the first new message). */
  previousLastMessageId: string | null;
}

/** A row as the driver hands it over. */
export type Row = Record<string, unknown>;

/**
 * The rows the Sessions module's statements read, each named once by its entity's fields (RowShape): sessions as
 * `s`, messages as `m`.
 */
@Injectable()
export class SessionShapes {
  readonly summary: RowShape<SessionEntity, (typeof SUMMARY_FIELDS)[number]>;
  readonly session: RowShape<SessionEntity, (typeof SESSION_FIELDS)[number]>;
  readonly messageView: RowShape<MessageEntity, (typeof MESSAGE_VIEW_FIELDS)[number]>;
  readonly message: RowShape<MessageEntity, (typeof MESSAGE_FIELDS)[number]>;

  constructor(dataSource: DataSource) {
    this.summary = RowShape.of(dataSource, SessionEntity, 's', SUMMARY_FIELDS);
    this.session = RowShape.of(dataSource, SessionEntity, 's', SESSION_FIELDS);
    this.messageView = RowShape.of(dataSource, MessageEntity, 'm', MESSAGE_VIEW_FIELDS);
    this.message = RowShape.of(dataSource, MessageEntity, 'm', MESSAGE_FIELDS);
  }
}

/** A lease renewal, except for an interrupted turn: its lease only runs out. */
export const RENEWED_LEASE = (value: string) => `CASE WHEN s.turn_interrupted_at IS NULL THEN ${value} ELSE s.lease_expires_at END`;

/** A timestamp as Unix ms (a float8 the driver hands over as a number), for a column read outside a shape. */
export const ms = (column: string) => `(extract(epoch from ${column}) * 1000)::float8 AS ${column.split('.').pop()}`;

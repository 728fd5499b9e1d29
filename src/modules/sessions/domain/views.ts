import type { ApiSchema } from '../../../platform/http/api-schema';
import { MessageEntity, SessionEntity } from '../entities';
import { SessionStatus } from './session-status';

/** The spec's Session: optional fields are omitted when unset, never null. */
export type SessionView = ApiSchema<'Session'>;

/** Why a session is in its status, when the status alone would leave the user guessing. */
export type StatusReason = ApiSchema<'StatusReason'>;

/** The spec's Message: exactly its fields, optional ones omitted when unset. */
export type MessageView = ApiSchema<'Message'>;

export function toSessionView(
  session: Pick<SessionEntity, 'id' | 'status' | 'messageCount' | 'title' | 'computerId' | 'settings' | 'createdAt' | 'updatedAt' | 'completedAt'> &
    Partial<Pick<SessionEntity, 'turnInterruptedAt' | 'pendingToolApprovals'>>,
  statusReason?: StatusReason | null,
): SessionView {
  const view: SessionView = {
    sessionId: session.id,
    status: session.status,
    messageCount: session.messageCount,
    createdAt: session.createdAt.getTime(),
    updatedAt: session.updatedAt.getTime(),
  };
  if (session.title !== null) view.title = session.title;
  if (session.completedAt) view.completedAt = session.completedAt.getTime();
  if (session.computerId) view.computerId = session.computerId;
  if (Object.keys(session.settings).length > 0) view.sessionSettings = session.settings;
  if (session.turnInterruptedAt && session.status === SessionStatus.Running) view.interruptedAt = session.turnInterruptedAt.getTime();
  if (session.pendingToolApprovals) view.pendingToolApprovals = session.pendingToolApprovals;
  if (statusReason) view.statusReason = statusReason;
  return view;
}

export function toMessageView(message: Omit<MessageEntity, 'organizationId' | 'sessionId' | 'authorId'>): MessageView {
  const view: MessageView = {
    id: message.id,
    role: message.role,
    content: message.content,
    createdAt: message.createdAt.getTime(),
    updatedAt: message.updatedAt.getTime(),
  };
  if (message.parentId) view.parentId = message.parentId;
  if (message.userMessageSource) view.userMessageSource = message.userMessageSource;
  return Object.assign(view, message.attributes);
}

import type { TokenUsage } from '../domain/session-settings';
import type { MessageRole } from '../domain/message';
import type { SessionStatus } from '../domain/session-status';

/** A session was created. */
export interface SessionCreatedData {
  sessionId: string;
  ownerId: string;
  computerId: string | null;
  title: string | null;
}

/** A session moved from one status to another (see the status machine in docs/concepts.md). */
export interface SessionStatusChangedData {
  sessionId: string;
  from: SessionStatus;
  to: SessionStatus;
}

/**
 * A message was stored in a session: user messages from clients, the others from agents and the
 * server. Streams and webhooks add the message itself when the organization keeps message history.
 */
export interface MessageAddedData {
  sessionId: string;
  messageId: string;
  role: MessageRole;
  /** Who wrote a user message; null for the others. */
  authorId: string | null;
  /** For a user message: the computer whose agent is to take it, or null for any of the organization's agents. */
  computerId: string | null;
}

/** An agent reported the tokens one model used in a turn; `userId` is the session's owner. */
export interface TurnUsageReportedData {
  sessionId: string;
  userId: string;
  model: string;
  usage: TokenUsage;
}

declare module '../../../platform/events/event' {
  interface EventDataMap {
    'session.created': SessionCreatedData;
    'session.status_changed': SessionStatusChangedData;
    'message.added': MessageAddedData;
    'turn.usage_reported': TurnUsageReportedData;
  }
}

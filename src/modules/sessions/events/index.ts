import type { TokenUsage } from '../domain/session-settings';
import type { MessageRole } from '../domain/message';
import type { SessionStatus } from '../domain/session-status';
import type { ToolApprovalStatus } from '../domain/tool-approval';

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

/**
 * A user interrupted the running turn (the actor says who): the agent stops its model call and
 * tools, writes what it has and ends the turn, and the session becomes `idle`.
 */
export interface TurnInterruptedData {
  sessionId: string;
  turnId: string;
}

/** An agent asks a person to approve a tool call before it runs it. */
export interface ToolApprovalRequestedData {
  sessionId: string;
  approvalId: string;
  turnId: string;
  toolName: string;
  toolCallId: string | null;
  /** What the call does, in one line (the command line, for a command). */
  summary: string;
  /** Unix ms: unanswered by then, the call is denied (`expired`). */
  expiresAt: number;
}

/**
 * A tool approval got its answer: `allowed` or `denied` by a user of the session (the actor),
 * `expired` (nobody answered in time: the call is denied) or `cancelled` (the turn ended first).
 */
export interface ToolApprovalResolvedData {
  sessionId: string;
  approvalId: string;
  turnId: string;
  toolName: string;
  status: ToolApprovalStatus;
  /** Whether the call may run: true only for `allowed`. */
  allowed: boolean;
  message: string | null;
}

declare module '../../../platform/events/event' {
  interface EventDataMap {
    'session.created': SessionCreatedData;
    'session.status_changed': SessionStatusChangedData;
    'message.added': MessageAddedData;
    'turn.usage_reported': TurnUsageReportedData;
    'turn.interrupted': TurnInterruptedData;
    'tool_approval.requested': ToolApprovalRequestedData;
    'tool_approval.resolved': ToolApprovalResolvedData;
  }
}

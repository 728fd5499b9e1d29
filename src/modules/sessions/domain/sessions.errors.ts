import { codesOf, CodeOf, errorClassOf, ErrorKind, ErrorTable } from '../../../platform/http/domain-error';

const SESSIONS_ERRORS = {
  SessionNotFound: { code: 'session_not_found', kind: ErrorKind.NotFound },
  ComputerNotFound: { code: 'computer_not_found', kind: ErrorKind.NotFound },
  MessageHistoryDisabled: { code: 'message_history_disabled', kind: ErrorKind.Forbidden },
  ReadOnlyRole: { code: 'read_only_role', kind: ErrorKind.Forbidden },
  ModelNotAllowed: { code: 'model_not_allowed', kind: ErrorKind.Forbidden },
  TurnNotActive: { code: 'turn_not_active', kind: ErrorKind.Conflict },
  ParentNotFound: { code: 'parent_message_not_found', kind: ErrorKind.InvalidRequest },
  TooManyLongPolls: { code: 'too_many_long_polls', kind: ErrorKind.TooManyRequests },
  TooManyDeltas: { code: 'too_many_deltas', kind: ErrorKind.TooManyRequests },
  NoRunningTurn: { code: 'no_running_turn', kind: ErrorKind.Conflict },
  TurnInterrupted: { code: 'turn_interrupted', kind: ErrorKind.Conflict },
  ToolApprovalNotFound: { code: 'tool_approval_not_found', kind: ErrorKind.NotFound },
  ToolApprovalNotPending: { code: 'tool_approval_not_pending', kind: ErrorKind.Conflict },
  SessionArchived: { code: 'session_archived', kind: ErrorKind.Conflict },
  ComputerWorkDisabled: { code: 'computer_work_disabled', kind: ErrorKind.Forbidden },
  CloudSessionSyncOff: { code: 'cloud_session_sync_off', kind: ErrorKind.Forbidden },
  NotAnAgent: { code: 'agent_token_required', kind: ErrorKind.Forbidden },
} as const satisfies ErrorTable;

export const SessionsErrorCode = codesOf(SESSIONS_ERRORS);
export type SessionsErrorCode = CodeOf<typeof SESSIONS_ERRORS>;

export class SessionsError extends errorClassOf(SESSIONS_ERRORS) {}

/** The running turn was interrupted by a user: its agent must stop, append what it has and end the turn. */
export function interruptedError(sessionId: string, turnId: string): SessionsError {
  return new SessionsError(
    SessionsErrorCode.TurnInterrupted,
    `Turn ${turnId} of session ${sessionId} was interrupted by a user: stop, append what you have and end the turn.`,
  );
}

/** An agent's call naming a turn that is over: it ended, or its lease ran out and another agent took the work. */
export function turnNotActive(sessionId: string, turnId: string, sessionStatus: string): SessionsError {
  return new SessionsError(
    SessionsErrorCode.TurnNotActive,
    `Turn ${turnId} is not the running turn of session ${sessionId}: it ended, or its lease ran out and another agent took the work.`,
    { sessionStatus },
  );
}

/** The one answer for a session the caller may not read, whatever the reason (unknown, another organization's, hidden). */
export function sessionNotFound(sessionId: string): SessionsError {
  return new SessionsError(SessionsErrorCode.SessionNotFound, `No session ${sessionId} exists in your organization.`);
}

export function toolApprovalNotFound(sessionId: string, approvalId: string): SessionsError {
  return new SessionsError(SessionsErrorCode.ToolApprovalNotFound, `No tool approval ${approvalId} exists in session ${sessionId}.`);
}

/** A person reading messages where the organization's message history is off. */
export function messageHistoryDisabled(): SessionsError {
  return new SessionsError(SessionsErrorCode.MessageHistoryDisabled, 'Reading message history is not enabled for your organization.');
}

/** An archived session takes no new turn until it is unarchived. */
export function sessionArchived(sessionId: string, archivedAt: string): SessionsError {
  return new SessionsError(
    SessionsErrorCode.SessionArchived,
    `Session ${sessionId} was archived at ${archivedAt} and takes no new messages. Unarchive it first: PATCH its sessionSettings.archivedAt to null.`,
    { archivedAt },
  );
}

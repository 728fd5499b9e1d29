import { DomainError, ErrorKind } from '../../../platform/http/domain-error';

export enum SessionsErrorCode {
  SessionNotFound = 'session_not_found',
  ComputerNotFound = 'computer_not_found',
  MessageHistoryDisabled = 'message_history_disabled',
  ReadOnlyRole = 'read_only_role',
  ModelNotAllowed = 'model_not_allowed',
  TurnNotActive = 'turn_not_active',
  ParentNotFound = 'parent_message_not_found',
  TooManyLongPolls = 'too_many_long_polls',
  TooManyDeltas = 'too_many_deltas',
  NoRunningTurn = 'no_running_turn',
  TurnInterrupted = 'turn_interrupted',
  ToolApprovalNotFound = 'tool_approval_not_found',
  ToolApprovalNotPending = 'tool_approval_not_pending',
  SessionArchived = 'session_archived',
  ComputerWorkDisabled = 'computer_work_disabled',
  CloudSessionSyncOff = 'cloud_session_sync_off',
  NotAnAgent = 'agent_token_required',
}

export class SessionsError extends DomainError<SessionsErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case SessionsErrorCode.SessionNotFound:
      case SessionsErrorCode.ComputerNotFound:
      case SessionsErrorCode.ToolApprovalNotFound:
        return ErrorKind.NotFound;
      case SessionsErrorCode.MessageHistoryDisabled:
      case SessionsErrorCode.ReadOnlyRole:
      case SessionsErrorCode.ModelNotAllowed:
      case SessionsErrorCode.ComputerWorkDisabled:
      case SessionsErrorCode.CloudSessionSyncOff:
      case SessionsErrorCode.NotAnAgent:
        return ErrorKind.Forbidden;
      case SessionsErrorCode.TurnNotActive:
      case SessionsErrorCode.NoRunningTurn:
      case SessionsErrorCode.TurnInterrupted:
      case SessionsErrorCode.ToolApprovalNotPending:
      case SessionsErrorCode.SessionArchived:
        return ErrorKind.Conflict;
      case SessionsErrorCode.ParentNotFound:
        return ErrorKind.InvalidRequest;
      case SessionsErrorCode.TooManyLongPolls:
      case SessionsErrorCode.TooManyDeltas:
        return ErrorKind.TooManyRequests;
    }
  }
}

/** The running turn was interrupted by a user: its agent must stop, append what it has and end the turn. */
export function interruptedError(sessionId: string, turnId: string): SessionsError {
  return new SessionsError(
    SessionsErrorCode.TurnInterrupted,
    `Turn ${turnId} of session ${sessionId} was interrupted by a user: stop, append what you have and end the turn.`,
  );
}

/** The one answer for a session the caller may not read, whatever the reason (unknown, another organization's, hidden). */
export function sessionNotFound(sessionId: string): SessionsError {
  return new SessionsError(SessionsErrorCode.SessionNotFound, `No session ${sessionId} exists in your organization.`);
}

export function toolApprovalNotFound(sessionId: string, approvalId: string): SessionsError {
  return new SessionsError(SessionsErrorCode.ToolApprovalNotFound, `No tool approval ${approvalId} exists in session ${sessionId}.`);
}

/** An archived session takes no new turn until it is unarchived. */
export function sessionArchived(sessionId: string, archivedAt: string): SessionsError {
  return new SessionsError(
    SessionsErrorCode.SessionArchived,
    `Session ${sessionId} was archived at ${archivedAt} and takes no new messages. Unarchive it first: PATCH its sessionSettings.archivedAt to null.`,
    { archivedAt },
  );
}

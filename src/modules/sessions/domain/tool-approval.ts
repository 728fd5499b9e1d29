/** Where a tool approval stands; every status but `pending` is final. */
export enum ToolApprovalStatus {
  Pending = 'pending',
  /** A user of the session allowed the call: the agent runs it. */
  Allowed = 'allowed',
  /** A user denied it: the agent gives the model the denial (and the user's message) as the call's result. */
  Denied = 'denied',
  /** Nobody answered within the timeout: a denial. */
  Expired = 'expired',
  /** The turn ended, or was interrupted, before anyone answered. */
  Cancelled = 'cancelled',
}

export const TOOL_APPROVAL_STATUSES = Object.values(ToolApprovalStatus);

/** What a person answers. */
export type ToolApprovalDecision = 'allow' | 'deny';

/**
 * Which tool calls need a person's approval: calls of the named tools, and commands (the agent's
 * `Execute` tool) matching a pattern (patterns read as the command denylist's are). The
 * organization's controls and the session's setting add up: a session can ask for more approvals,
 * never fewer, and only shorten the timeout.
 */
export interface ToolApprovalRules {
  tools?: string[];
  commandPatterns?: string[];
  /** How long a request waits for an answer before it is denied. */
  timeoutSeconds?: number;
}

export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 600;
export const MAX_APPROVAL_TIMEOUT_SECONDS = 86_400;

/** The timeout in force: the shorter of the controls' and the session's, else the default. */
export function approvalTimeoutSeconds(controls: ToolApprovalRules | undefined, session: ToolApprovalRules | undefined): number {
  const given = [controls?.timeoutSeconds, session?.timeoutSeconds].filter((s): s is number => typeof s === 'number' && s > 0);
  return given.length > 0 ? Math.min(...given) : DEFAULT_APPROVAL_TIMEOUT_SECONDS;
}

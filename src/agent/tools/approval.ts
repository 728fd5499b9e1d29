import type { AgentPolicy, SessionSettings } from '../../contract/agent-channel';
import { checkCommand } from './command-policy';

/** The `toolApproval` rules of the organization's controls or of a session. */
export type ApprovalRules = NonNullable<AgentPolicy['toolApproval']> | NonNullable<SessionSettings['toolApproval']>;

/** Characters of a call's summary a person is shown (the server's limit). */
const SUMMARY_CHARS = 2000;

/**
 * Why a person must approve this call before it runs (a sentence), or null. The organization's rules
 * and the session's add up. A command (`Execute`) needs approval when a pattern matches any command of
 * its line, read as the command denylist reads it, or when the line cannot be checked at all.
 */
export function approvalNeeded(rules: Array<ApprovalRules | undefined>, toolName: string, input: Record<string, unknown> | null): string | null {
  const tools = rules.flatMap((r) => (Array.isArray(r?.tools) ? r.tools : []));
  if (tools.includes(toolName)) return `every ${toolName} call needs a person's approval`;
  const patterns = rules.flatMap((r) => (Array.isArray(r?.commandPatterns) ? r.commandPatterns : []));
  const command = input?.command;
  if (toolName !== 'Execute' || patterns.length === 0 || typeof command !== 'string') return null;
  const match = checkCommand(command, { commandDenylist: patterns, commandBlocklist: [], commandAllowlist: [] });
  return match === null ? null : `the command needs a person's approval (${match.replace(/^commandDenylist: /, 'toolApproval.commandPatterns: ')})`;
}

/** What the call does, in one line a person can judge: the command line for a command, else the tool and its arguments. */
export function callSummary(toolName: string, input: Record<string, unknown> | null): string {
  const text = toolName === 'Execute' && typeof input?.command === 'string' ? input.command : `${toolName} ${JSON.stringify(input ?? {})}`;
  const line = text.trim() || toolName;
  return line.length > SUMMARY_CHARS ? `${line.slice(0, SUMMARY_CHARS - 1)}…` : line;
}

import type { Principal } from '../../auth';
import { StoredSessionSettings } from '../domain/session-settings';
import type { ToolApprovalRules } from '../domain/tool-approval';

/**
 * What the organization's controls say about sessions: a contract the EnterpriseControls module
 * fulfils (it imports Sessions). Resolved at start.
 */
export abstract class SessionRules {
  /** Settings laid under a new session's own. */
  abstract defaults(organizationId: string): Promise<StoredSessionSettings>;
  /** Why the caller may not use a model (a sentence naming the rule), or null. */
  abstract modelRefusal(principal: Principal, model: string): Promise<{ rule: string; detail: string } | null>;
  /** Whether any model may be refused to the caller (false: checks can be skipped). */
  abstract restrictsModels(principal: Principal): Promise<boolean>;
  /** The tool calls the organization's agents must have a person approve; undefined: none. */
  abstract toolApproval(organizationId: string): Promise<ToolApprovalRules | undefined>;
  /** Every organization that keeps its sessions a limited time, and for how many days of inactivity. */
  abstract retentionPolicies(): Promise<Array<{ organizationId: string; days: number }>>;
  /** Whether the runs agents start on their own computers (headless runs) are recorded as sessions here (`cloudSessionSync`). */
  abstract cloudSessionSync(organizationId: string): Promise<boolean>;
}

import { Injectable } from '@nestjs/common';
import type { Principal } from '../../auth';
import { StoredSessionSettings } from '../domain/session-settings';
import { SessionsError, SessionsErrorCode } from '../domain/sessions.errors';
import type { ToolApprovalRules } from '../domain/tool-approval';

/** What the organization's controls say about sessions. */
export interface SessionRules {
  /** Settings laid under a new session's own. */
  defaults(organizationId: string): Promise<StoredSessionSettings>;
  /** Why the caller may not use a model (a sentence naming the rule), or null. */
  modelRefusal(principal: Principal, model: string): Promise<{ rule: string; detail: string } | null>;
  /** Whether any model may be refused to the caller (false: checks can be skipped). */
  restrictsModels(principal: Principal): Promise<boolean>;
  /** The tool calls the organization's agents must have a person approve; undefined: none. */
  toolApproval(organizationId: string): Promise<ToolApprovalRules | undefined>;
}

/**
 * Where Sessions reads the enterprise controls on sessions. The EnterpriseControls module imports
 * Sessions (retention deletes sessions), so it binds its rules here at start-up; unbound, there
 * are no defaults and every model is allowed.
 */
@Injectable()
export class SessionPolicy {
  private rules: SessionRules = {
    defaults: () => Promise.resolve({}),
    modelRefusal: () => Promise.resolve(null),
    restrictsModels: () => Promise.resolve(false),
    toolApproval: () => Promise.resolve(undefined),
  };

  bind(rules: SessionRules): void {
    this.rules = rules;
  }

  defaults(organizationId: string): Promise<StoredSessionSettings> {
    return this.rules.defaults(organizationId);
  }

  restrictsModels(principal: Principal): Promise<boolean> {
    return this.rules.restrictsModels(principal);
  }

  toolApproval(organizationId: string): Promise<ToolApprovalRules | undefined> {
    return this.rules.toolApproval(organizationId);
  }

  /** 403 naming the rule when a model the settings name may not be used by the caller. */
  async requireModels(principal: Principal, settings: Pick<StoredSessionSettings, 'model' | 'specModeModel'>): Promise<void> {
    for (const field of ['model', 'specModeModel'] as const) {
      const model = settings[field];
      if (typeof model !== 'string') continue;
      const refusal = await this.rules.modelRefusal(principal, model);
      if (refusal) throw new SessionsError(SessionsErrorCode.ModelNotAllowed, refusal.detail, { field: `sessionSettings.${field}`, rule: refusal.rule, model });
    }
  }
}

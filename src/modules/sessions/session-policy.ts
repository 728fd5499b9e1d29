import { Injectable } from '@nestjs/common';
import type { Principal } from '../auth';
import { SessionRules } from './contracts/session-rules';
import { StoredSessionSettings } from './domain/session-settings';
import { SessionsError, SessionsErrorCode } from './domain/sessions.errors';
import type { ToolApprovalRules } from './domain/tool-approval';

/** How Sessions applies the controls' rules on sessions. */
@Injectable()
export class SessionPolicy {
  constructor(private readonly rules: SessionRules) {}

  defaults(organizationId: string): Promise<StoredSessionSettings> {
    return this.rules.defaults(organizationId);
  }

  restrictsModels(principal: Principal): Promise<boolean> {
    return this.rules.restrictsModels(principal);
  }

  cloudSessionSync(organizationId: string): Promise<boolean> {
    return this.rules.cloudSessionSync(organizationId);
  }

  toolApproval(organizationId: string): Promise<ToolApprovalRules | undefined> {
    return this.rules.toolApproval(organizationId);
  }

  /** 403 naming the rule when a model the settings name may not be used by the caller. */
  async requireModels(principal: Principal, settings: { model?: string | null; specModeModel?: string | null }): Promise<void> {
    for (const field of ['model', 'specModeModel'] as const) {
      const model = settings[field];
      if (typeof model !== 'string') continue;
      const refusal = await this.rules.modelRefusal(principal, model);
      if (refusal) throw new SessionsError(SessionsErrorCode.ModelNotAllowed, refusal.detail, { field: `sessionSettings.${field}`, rule: refusal.rule, model });
    }
  }
}

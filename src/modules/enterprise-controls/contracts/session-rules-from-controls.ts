import { Injectable } from '@nestjs/common';
import { Principal } from '../../auth';
import { SessionRules } from '../../sessions';
import { checkModel, restrictsModels } from '../domain/model-policy';
import { EnterpriseControlsService } from '../enterprise-controls.service';

/** Sessions' SessionRules: the default models of new sessions, the model policy, tool approvals and retention. */
@Injectable()
export class SessionRulesFromControls extends SessionRules {
  constructor(private readonly controls: EnterpriseControlsService) {
    super();
  }

  async defaults(organizationId: string): ReturnType<SessionRules['defaults']> {
    const { model, specModeModel } = (await this.controls.inForce(organizationId)).settings.sessionDefaultSettings;
    return { ...(model !== undefined ? { model } : {}), ...(specModeModel !== undefined ? { specModeModel } : {}) };
  }

  async modelRefusal(principal: Principal, model: string): ReturnType<SessionRules['modelRefusal']> {
    return checkModel((await this.controls.inForce(principal.organizationId)).settings, principal.userId, model);
  }

  async restrictsModels(principal: Principal): Promise<boolean> {
    return restrictsModels((await this.controls.inForce(principal.organizationId)).settings, principal.userId);
  }

  async toolApproval(organizationId: string): ReturnType<SessionRules['toolApproval']> {
    return (await this.controls.inForce(organizationId)).settings.toolApproval;
  }

  retentionPolicies(): ReturnType<SessionRules['retentionPolicies']> {
    return this.controls.retentionPolicies();
  }

  async cloudSessionSync(organizationId: string): Promise<boolean> {
    return (await this.controls.inForce(organizationId)).settings.cloudSessionSync;
  }
}

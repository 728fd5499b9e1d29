import { Module, OnModuleInit } from '@nestjs/common';
import { SecretBox } from '../../platform/secrets/secret-box';
import { AuthModule, OrganizationControlsReader } from '../auth';
import { SessionPolicy, SessionsModule } from '../sessions';
import { checkModel, restrictsModels } from './domain/model-policy';
import { AgentPolicyController, EnterpriseControlsController } from './enterprise-controls.controller';
import { EnterpriseControlsRepository } from './enterprise-controls.repository';
import { EnterpriseControlsService } from './enterprise-controls.service';
import { SessionRetentionJob } from './jobs/session-retention.job';
import { ModelRelay } from './relay/model-relay';
import { enterpriseControlsSchemas } from './schemas/enterprise-controls.schemas';

@Module({
  imports: [AuthModule, SessionsModule],
  controllers: [EnterpriseControlsController, AgentPolicyController],
  providers: [EnterpriseControlsRepository, EnterpriseControlsService, ModelRelay, SecretBox, SessionRetentionJob],
  exports: [EnterpriseControlsService],
})
export class EnterpriseControlsModule implements OnModuleInit {
  constructor(
    private readonly controls: EnterpriseControlsService,
    private readonly reader: OrganizationControlsReader,
    private readonly sessions: SessionPolicy,
  ) {}

  /**
   * The controls take effect by being read: Auth, Sessions and Computers read them through the
   * ports bound here (they cannot import this module, which imports them), always the latest
   * revision, so a revision in the database is a revision in force.
   */
  async onModuleInit(): Promise<void> {
    enterpriseControlsSchemas.compileAll();
    await this.controls.sealPlainSecrets();
    this.reader.bind(async (organizationId) => {
      const { settings } = await this.controls.inForce(organizationId);
      return {
        restrictApiKeyCreationToManagers: settings.restrictApiKeyCreationToManagers,
        restrictMemberVisibility: settings.restrictMemberVisibility,
        managedComputersEnabled: settings.managedComputersEnabled,
        managedComputersAllowedEmails: settings.managedComputersAllowedEmails,
        byomComputersEnabled: settings.byomComputersEnabled,
        byomComputersAllowedEmails: settings.byomComputersAllowedEmails,
      };
    });
    this.sessions.bind({
      defaults: async (organizationId) => {
        const { model, specModeModel } = (await this.controls.inForce(organizationId)).settings.sessionDefaultSettings;
        return { ...(model !== undefined ? { model } : {}), ...(specModeModel !== undefined ? { specModeModel } : {}) };
      },
      modelRefusal: async (principal, model) => checkModel((await this.controls.inForce(principal.organizationId)).settings, principal.userId, model),
      restrictsModels: async (principal) => restrictsModels((await this.controls.inForce(principal.organizationId)).settings, principal.userId),
      toolApproval: async (organizationId) => (await this.controls.inForce(organizationId)).settings.toolApproval,
    });
  }
}

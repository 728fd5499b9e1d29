import { Global, Module, OnModuleInit } from '@nestjs/common';
import { SecretBox } from '../../platform/secrets/secret-box';
import { AuthModule, OrganizationControlsReader } from '../auth';
import { SessionRules, SessionsModule } from '../sessions';
import { OrganizationControlsFromSettings } from './contracts/organization-controls-from-settings';
import { SessionRulesFromControls } from './contracts/session-rules-from-controls';
import { AgentPolicyController, EnterpriseControlsController } from './enterprise-controls.controller';
import { McpRelayController } from './mcp-relay.controller';
import { PluginCatalogController, PluginCatalogReportsController } from './plugin-catalog/plugin-catalog.controller';
import { PluginCatalogRepository } from './plugin-catalog/plugin-catalog.repository';
import { PluginCatalogService } from './plugin-catalog/plugin-catalog.service';
import { McpOAuthCallbackController, McpOAuthController } from './mcp-oauth.controller';
import { McpOAuth } from './mcp-oauth/mcp-oauth.service';
import { McpOAuthRepository } from './mcp-oauth/mcp-oauth.repository';
import { EnterpriseControlsRepository } from './enterprise-controls.repository';
import { EnterpriseControlsService } from './enterprise-controls.service';
import { AgentRelays } from './agent-relays.service';
import { ModelRelay } from './relay/model-relay';
import { McpRelay } from './relay/mcp-relay';

/**
 * Global for the contracts it fulfils: Auth's OrganizationControlsReader and Sessions' SessionRules
 * (those modules cannot import this one, which imports them).
 */
@Global()
@Module({
  imports: [AuthModule, SessionsModule],
  controllers: [
    EnterpriseControlsController,
    AgentPolicyController,
    McpRelayController,
    McpOAuthController,
    McpOAuthCallbackController,
    PluginCatalogReportsController,
    PluginCatalogController,
  ],
  providers: [
    EnterpriseControlsRepository,
    EnterpriseControlsService,
    AgentRelays,
    ModelRelay,
    McpRelay,
    PluginCatalogRepository,
    PluginCatalogService,
    McpOAuth,
    McpOAuthRepository,
    SecretBox,
    { provide: OrganizationControlsReader, useClass: OrganizationControlsFromSettings },
    { provide: SessionRules, useClass: SessionRulesFromControls },
  ],
  exports: [EnterpriseControlsService, OrganizationControlsReader, SessionRules],
})
export class EnterpriseControlsModule implements OnModuleInit {
  constructor(private readonly controls: EnterpriseControlsService) {}

  async onModuleInit(): Promise<void> {
    await this.controls.sealPlainSecrets();
  }
}

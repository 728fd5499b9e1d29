import { Injectable } from '@nestjs/common';
import { marketplaceUrl } from '../../../contract/marketplaces';
import { validationError } from '../../../platform/http/validation';
import type { Principal } from '../../auth';
import { EnterpriseControlsService } from '../enterprise-controls.service';
import { PluginCatalogReport, PluginCatalogView, pluginCatalogView, UNKNOWN_MARKETPLACE } from './plugin-catalog';
import { PluginCatalogRepository } from './plugin-catalog.repository';

/**
 * The plugins of the organization's marketplaces, as its agents report them: the server never runs git (fetching a
 * marketplace needs a sandbox, and those live with agents), so it keeps what agents found, the latest report of each
 * marketplace, and shows it beside the settings in force.
 */
@Injectable()
export class PluginCatalogService {
  constructor(
    private readonly repository: PluginCatalogRepository,
    private readonly controls: EnterpriseControlsService,
  ) {}

  /**
   * Keeps an agent's report of a marketplace as the organization's latest. Only of a marketplace the controls in force
   * know (400 naming `marketplace` otherwise): reports cannot fill the table with names nobody configured.
   */
  async record(principal: Principal, report: PluginCatalogReport): Promise<void> {
    if (principal.credential.kind !== 'computer') throw new Error('a plugin catalog is reported with an agent token (AgentTokensOnly)');
    const { settings } = await this.controls.inForce(principal.organizationId);
    const known = Object.hasOwn(settings.extraKnownMarketplaces, report.marketplace) ? settings.extraKnownMarketplaces[report.marketplace] : undefined;
    if (!known) {
      throw validationError([{ field: 'marketplace', message: UNKNOWN_MARKETPLACE }]);
    }
    await this.repository.replace(principal.organizationId, {
      marketplace: report.marketplace,
      url: marketplaceUrl(known),
      computerId: principal.credential.computerId,
      commitSha: report.outcome === 'read' ? report.commit : null,
      plugins: report.outcome === 'read' ? report.plugins : [],
      error: report.outcome === 'failed' ? report.error : null,
      reportedAt: new Date(),
    });
  }

  async catalog(principal: Principal): Promise<PluginCatalogView> {
    const { settings } = await this.controls.inForce(principal.organizationId);
    const stored = await this.repository.of(principal.organizationId, Object.keys(settings.extraKnownMarketplaces));
    return pluginCatalogView(settings, stored);
  }
}

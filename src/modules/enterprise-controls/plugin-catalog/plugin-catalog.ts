import { marketplaceRule, marketplaceUrl } from '../../../contract/marketplaces';
import type { ApiSchema } from '../../../platform/http/api-schema';
import type { EnterpriseSettings } from '../domain/settings';
import type { PluginCatalogEntity } from './plugin-catalog.entity';

export type CatalogPlugin = ApiSchema<'CatalogPlugin'>;
export type PluginCatalogReport = ApiSchema<'PluginCatalogReport'>;
export type PluginCatalogView = ApiSchema<'PluginCatalog'>;

/** A catalog as stored: the latest report of one marketplace. */
export type StoredCatalog = Omit<PluginCatalogEntity, 'organizationId'>;

/** Why a report of a marketplace the controls do not know is refused (400, at `marketplace`). */
export const UNKNOWN_MARKETPLACE = "is not among your organization's extraKnownMarketplaces (the controls may have changed since the agent read them)";

type CatalogSettings = Pick<EnterpriseSettings, 'extraKnownMarketplaces' | 'strictKnownMarketplaces' | 'enabledPlugins'>;

/**
 * Every marketplace of the settings with the latest catalog its agents reported of it (only one reported for its
 * current address: a marketplace pointed elsewhere since has none yet), each plugin marked as `enabledPlugins` has it,
 * and the enabled plugins no catalog lists.
 */
export function pluginCatalogView(settings: CatalogSettings, stored: readonly StoredCatalog[]): PluginCatalogView {
  const enabled = (id: string) => Object.hasOwn(settings.enabledPlugins, id) && settings.enabledPlugins[id] === true;
  const listed = new Set<string>();
  const marketplaces = Object.entries(settings.extraKnownMarketplaces).map(([name, known]) => {
    const row = stored.find((candidate) => candidate.marketplace === name && candidate.url === marketplaceUrl(known));
    for (const plugin of row?.plugins ?? []) listed.add(`${plugin.name}@${name}`);
    return {
      name,
      source: known.source,
      repo: known.repo,
      ...(known.ref ? { ref: known.ref } : {}),
      allowed: !('refusal' in marketplaceRule(name, known, settings.strictKnownMarketplaces)),
      catalog: row
        ? {
            outcome: row.error === null ? ('read' as const) : ('failed' as const),
            commit: row.commitSha,
            error: row.error,
            plugins: row.plugins.map((plugin) => ({ ...plugin, enabled: enabled(`${plugin.name}@${name}`) })),
            reportedAt: row.reportedAt.toISOString(),
            computerId: row.computerId,
          }
        : null,
    };
  });
  const unlistedEnabledPlugins = Object.keys(settings.enabledPlugins).filter((id) => enabled(id) && !listed.has(id));
  return { marketplaces, unlistedEnabledPlugins };
}

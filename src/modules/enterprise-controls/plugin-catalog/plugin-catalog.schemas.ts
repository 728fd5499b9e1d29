import { PLUGIN_CATALOG_LIMITS } from '../../../contract/marketplaces';
import { closedObject, NO_CONTROL_CHARACTERS, ref, SchemaObject, SchemaRegistry } from '../../../platform/http/json-schema';
import { CODE_HOSTS } from '../domain/settings';

const L = PLUGIN_CATALOG_LIMITS;

/** One line of text: not blank, no control characters, at most `max` characters. */
const text = (max: number, description: string): SchemaObject => ({
  type: 'string',
  minLength: 1,
  maxLength: max,
  allOf: [{ pattern: NO_CONTROL_CHARACTERS }, { pattern: '\\S' }],
  description: `${description} At most ${max} characters, one line.`,
});

const marketplace: SchemaObject = {
  type: 'string',
  minLength: 1,
  maxLength: 256,
  pattern: NO_CONTROL_CHARACTERS,
  description: "The marketplace's name: a key of the organization's `extraKnownMarketplaces`.",
};

/** A plugin's fields as the marketplace's manifest (`.claude-plugin/marketplace.json`) gives them. */
const pluginFields: Record<string, SchemaObject> = {
  name: text(L.name, "The plugin's `name`: `enabledPlugins` names it `{name}@{marketplace}`."),
  description: text(L.description, 'Its `description`.'),
  version: text(L.version, 'Its `version`.'),
  author: text(L.author, "Its author's name (`author.name`)."),
  category: text(L.category, 'Its `category`.'),
};

const definitions: Record<string, SchemaObject> = {
  CatalogPlugin: closedObject(['name'], pluginFields, 'A plugin as the marketplace lists it; fields the manifest does not give are absent.'),
  PluginCatalogRead: closedObject(
    ['marketplace', 'outcome', 'commit', 'plugins'],
    {
      marketplace,
      outcome: { type: 'string', enum: ['read'] },
      commit: { type: 'string', pattern: '^([0-9a-f]{40}|[0-9a-f]{64})$', description: 'The commit the agent read the manifest at.' },
      plugins: {
        type: 'array',
        maxItems: L.plugins,
        items: ref('CatalogPlugin'),
        description: `The plugins the manifest lists, in its order: the first ${L.plugins} at most.`,
      },
    },
    'The agent read the marketplace: its plugins at a commit.',
  ),
  PluginCatalogFailed: closedObject(
    ['marketplace', 'outcome', 'error'],
    {
      marketplace,
      outcome: { type: 'string', enum: ['failed'] },
      error: {
        type: 'string',
        minLength: 1,
        maxLength: L.error,
        description: `Why the agent could not read it (git's error, a manifest that is not JSON, \`strictKnownMarketplaces\` refusing it). At most ${L.error} characters.`,
      },
    },
    'The agent could not read the marketplace.',
  ),
  PluginCatalogReport: {
    type: 'object',
    oneOf: [ref('PluginCatalogRead'), ref('PluginCatalogFailed')],
    discriminator: { propertyName: 'outcome' },
    description: 'What an agent found of one marketplace of the organization: `{outcome: "read", commit, plugins}` or `{outcome: "failed", error}`.',
  },
  CatalogPluginState: closedObject(
    ['name', 'enabled'],
    {
      ...pluginFields,
      enabled: { type: 'boolean', description: '`enabledPlugins` has `{name}@{marketplace}: true`: agents load it.' },
    },
    'A plugin of the catalog, as an agent reported it, and whether the organization enables it.',
  ),
  MarketplaceCatalog: closedObject(
    ['name', 'source', 'repo', 'allowed', 'catalog'],
    {
      name: { type: 'string', description: 'Its key in `extraKnownMarketplaces`.' },
      source: { type: 'string', enum: [...CODE_HOSTS] },
      repo: { type: 'string' },
      ref: { type: 'string', description: 'The branch or tag agents fetch; absent: the default branch.' },
      allowed: {
        type: 'boolean',
        description:
          'Whether `strictKnownMarketplaces` lets agents use it: always while that list is empty; otherwise only when an entry names its code host and repository.',
      },
      catalog: {
        ...closedObject(['outcome', 'commit', 'error', 'plugins', 'reportedAt', 'computerId'], {
          outcome: { type: 'string', enum: ['read', 'failed'] },
          commit: { type: 'string', nullable: true, description: 'The commit the agent read; null when it failed.' },
          error: { type: 'string', nullable: true, description: 'Why the agent could not read it; null when it did.' },
          plugins: { type: 'array', items: ref('CatalogPluginState'), description: 'In the order of its manifest; empty when it failed.' },
          reportedAt: { type: 'string', format: 'date-time', description: 'When the server took the report.' },
          computerId: { type: 'string', format: 'uuid', description: 'The computer whose agent reported it.' },
        }),
        nullable: true,
        description:
          'The latest report an agent of the organization made of this marketplace at its current address, as the agent gave it: the server does not fetch marketplaces and does not vouch for what they hold. Null until an agent reports it (agents do when they next run a turn).',
      },
    },
    "A marketplace of the organization's `extraKnownMarketplaces`, and what its agents last found there.",
  ),
  PluginCatalog: closedObject(
    ['marketplaces', 'unlistedEnabledPlugins'],
    {
      marketplaces: { type: 'array', items: ref('MarketplaceCatalog'), description: 'Every marketplace of `extraKnownMarketplaces`, in its order.' },
      unlistedEnabledPlugins: {
        type: 'array',
        items: { type: 'string' },
        description:
          'The `plugin@marketplace` entries `enabledPlugins` turns on that no catalog lists: the marketplace is not known, has no catalog yet or could not be read, or its manifest does not list the plugin.',
      },
    },
    'The plugins agents can load, by marketplace, as agents reported them (the server never fetches a marketplace), with what the organization enables.',
  ),
};

export const pluginCatalogSchemas = new SchemaRegistry('plugin-catalog').add(definitions);

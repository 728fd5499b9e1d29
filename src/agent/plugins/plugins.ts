import { readdir, readFile, realpath } from 'node:fs/promises';
import { basename, join, sep } from 'node:path';
import { load as loadYaml } from 'js-yaml';
import type { AgentPolicy, CatalogPlugin, PluginCatalogReport } from '../../contract/agent-channel';
import { PLUGIN_CATALOG_LIMITS } from '../../contract/marketplaces';
import { HookEvent, HooksConfig, parseHooks } from '../hooks/hooks-config';
import { Marketplaces, marketplaceRule } from './marketplaces';

/** A custom command of a plugin: a message `/name args` (or `/plugin:name args`) stands for its prompt. */
export interface PluginCommand {
  plugin: string;
  name: string;
  description: string;
  prompt: string;
}

/** A skill of a plugin: its description is offered to the model, its instructions and files read on demand (the Skill tool). */
export interface PluginSkill {
  plugin: string;
  name: string;
  description: string;
  /** The skill's folder (real path): the Skill tool reads only inside it. */
  dir: string;
}

/** A custom subagent (Claude Code's `agents/*.md`, Factory's `droids/*.md`): the Task tool starts it by name. */
export interface SubagentDefinition {
  /** Where it comes from: a plugin's name, `project` or `user`. */
  plugin: string;
  name: string;
  description: string;
  /** Its instructions: the file's body. */
  prompt: string;
  /** The only tools it is offered (front matter `tools`); all of the turn's when absent. */
  tools?: string[];
  /** The model it runs (front matter `model`), unless `inherit` or absent: the turn's. */
  model?: string;
}

/** The commands, skills and subagents of one folder, or of several merged. */
export interface Extensions {
  commands: PluginCommand[];
  skills: PluginSkill[];
  agents: SubagentDefinition[];
}

/**
 * An MCP server a plugin brings (`.mcp.json`): a stdio one is started on the computer as the organization's are, confined
 * as commands are; an HTTP one is reached by the agent itself, under the address rules of its own requests.
 */
export type PluginMcpServer = { plugin: string; name: string } & (
  { transport: 'stdio'; command: string; args: string[]; env: Record<string, string> } | { transport: 'http'; url: string; headers: Record<string, string> }
);

export interface LoadedPlugins extends Extensions {
  /** `plugin@marketplace` of each plugin that loaded. */
  loaded: string[];
  /** The plugins' MCP servers; the organization's `mcpPolicy` decides which are used. */
  mcpServers: PluginMcpServer[];
  /** The plugins' hooks, `${CLAUDE_PLUGIN_ROOT}` in their commands made the plugin's folder. */
  hooks: HooksConfig;
  /** Why an enabled plugin, or its marketplace, did not load: said in the agent's log. */
  problems: string[];
}

export const NO_PLUGINS: LoadedPlugins = { loaded: [], commands: [], skills: [], agents: [], mcpServers: [], hooks: {}, problems: [] };

export type PluginPolicy = Pick<AgentPolicy, 'enabledPlugins' | 'extraKnownMarketplaces' | 'strictKnownMarketplaces' | 'sandbox' | 'networkPolicy'>;

/**
 * The organization's plugins, in the format the ecosystem shares (Claude Code's): a marketplace is a git
 * repository with `.claude-plugin/marketplace.json` listing plugins by folder; a plugin is a folder with
 * `commands/*.md`, `skills/<name>/SKILL.md` and `hooks/hooks.json` (and `.claude-plugin/plugin.json`). An entry
 * `plugin@marketplace: true` of `enabledPlugins` loads that plugin from the marketplace of that name in
 * `extraKnownMarketplaces`; `strictKnownMarketplaces`, when not empty, refuses every marketplace it does not
 * name and pins the others to its commit. Loaded again whenever those settings change.
 */
export class Plugins {
  private readonly marketplaces: Marketplaces;
  private cached: { key: string; plugins: Promise<LoadedPlugins> } | null = null;

  constructor(stateDir: string) {
    this.marketplaces = new Marketplaces(stateDir);
  }

  load(policy: PluginPolicy): Promise<LoadedPlugins> {
    const key = JSON.stringify([policy.enabledPlugins, policy.extraKnownMarketplaces, policy.strictKnownMarketplaces]);
    if (this.cached?.key !== key) {
      const plugins = this.loadAll(policy);
      this.cached = { key, plugins };
      // Something that failed (a marketplace out of reach) is tried again at the next turn.
      void plugins.then((loaded) => loaded.problems.length > 0 && this.cached?.plugins === plugins && (this.cached = null));
    }
    return this.cached.plugins;
  }

  private async loadAll(policy: PluginPolicy): Promise<LoadedPlugins> {
    const result: LoadedPlugins = { ...NO_PLUGINS, loaded: [], commands: [], skills: [], agents: [], mcpServers: [], hooks: {}, problems: [] };
    const enabled = Object.entries(policy.enabledPlugins ?? {})
      .filter(([, on]) => on === true)
      .map(([id]) => id);
    for (const id of enabled) {
      const at = id.lastIndexOf('@');
      const [plugin, marketplace] = at > 0 ? [id.slice(0, at), id.slice(at + 1)] : [id, ''];
      try {
        const known = policy.extraKnownMarketplaces?.[marketplace];
        if (!known) throw new Error(`its marketplace "${marketplace}" is not in the organization's extraKnownMarketplaces`);
        const rule = marketplaceRule(marketplace, known, policy.strictKnownMarketplaces ?? []);
        if ('refusal' in rule) throw new Error(rule.refusal);
        const checkout = await realpath((await this.marketplaces.checkout(known, rule, policy)).dir);
        const root = await pluginFolder(checkout, plugin);
        const loaded = await loadPlugin(plugin, root);
        result.commands.push(...loaded.commands);
        result.skills.push(...loaded.skills);
        result.agents.push(...loaded.agents);
        result.mcpServers.push(...loaded.mcpServers);
        for (const [event, entries] of Object.entries(loaded.hooks) as Array<[HookEvent, NonNullable<HooksConfig[HookEvent]>]>) {
          result.hooks[event] = [...(result.hooks[event] ?? []), ...entries];
        }
        result.loaded.push(id);
      } catch (error) {
        result.problems.push(`plugin ${id} did not load: ${(error as Error).message}`);
      }
    }
    return result;
  }

  /**
   * What each marketplace of `extraKnownMarketplaces` offers, for the organization's plugin catalog: the commit read
   * and the plugins its manifest lists, or why it could not be read (strictKnownMarketplaces refusing it included).
   * Every known marketplace is fetched, not only those of enabled plugins: the catalog shows what could be enabled.
   */
  async catalogs(policy: PluginPolicy): Promise<PluginCatalogReport[]> {
    const reports: PluginCatalogReport[] = [];
    for (const [marketplace, known] of Object.entries(policy.extraKnownMarketplaces ?? {})) {
      try {
        const rule = marketplaceRule(marketplace, known, policy.strictKnownMarketplaces ?? []);
        if ('refusal' in rule) throw new Error(rule.refusal);
        const { dir, commit } = await this.marketplaces.checkout(known, rule, policy);
        reports.push({ marketplace, outcome: 'read', commit, plugins: catalogPlugins(await readManifest(await realpath(dir))) });
      } catch (error) {
        reports.push({ marketplace, outcome: 'failed', error: capped((error as Error).message, PLUGIN_CATALOG_LIMITS.error, true) || 'unknown error' });
      }
    }
    return reports;
  }
}

/**
 * The plugins a marketplace's manifest lists, as its catalog reports them: the first PLUGIN_CATALOG_LIMITS.plugins
 * with a name (one too long to keep whole is left out: it could not be enabled by a cut name), each field capped.
 * `author` is the manifest's `author.name` (or an `author` string).
 */
export function catalogPlugins(manifest: Record<string, unknown>): CatalogPlugin[] {
  const limits = PLUGIN_CATALOG_LIMITS;
  const plugins: CatalogPlugin[] = [];
  for (const entry of Array.isArray(manifest.plugins) ? (manifest.plugins as unknown[]) : []) {
    if (plugins.length === limits.plugins) break;
    if (typeof entry !== 'object' || entry === null) continue;
    const fields = entry as Record<string, unknown>;
    const name = typeof fields.name === 'string' ? capped(fields.name, Infinity) : '';
    if (name === '' || [...name].length > limits.name) continue;
    const author = typeof fields.author === 'object' && fields.author !== null ? (fields.author as Record<string, unknown>).name : fields.author;
    const optional: Array<[Exclude<keyof CatalogPlugin, 'name'>, unknown, number]> = [
      ['description', fields.description, limits.description],
      ['version', fields.version, limits.version],
      ['author', author, limits.author],
      ['category', fields.category, limits.category],
    ];
    const plugin: CatalogPlugin = { name };
    for (const [key, value, max] of optional) {
      const text = typeof value === 'string' ? capped(value, max) : '';
      if (text !== '') plugin[key] = text;
    }
    plugins.push(plugin);
  }
  return plugins;
}

// eslint-disable-next-line no-control-regex -- a one-line field of the report may hold no control character
const CONTROL_OR_SPACE = /[\s\u0000-\u001f\u007f-\u009f]+/g;
// eslint-disable-next-line no-control-regex -- the server cannot store it
const NUL = /\u0000/g;

/**
 * Text as a report may carry it: well-formed (a lone surrogate, which JSON allows and the server refuses, replaced),
 * control characters and runs of white space made one space (only NUL removed where `lines`: an error may span lines),
 * at most `max` characters.
 */
function capped(text: string, max: number, lines = false): string {
  const clean = text
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')
    .replace(lines ? NUL : CONTROL_OR_SPACE, lines ? '' : ' ')
    .trim();
  const characters = [...clean];
  return characters.length <= max ? clean : `${characters.slice(0, max - 1).join('')}…`;
}

/** The marketplace's manifest, `.claude-plugin/marketplace.json`. */
function readManifest(checkout: string): Promise<Record<string, unknown>> {
  return readJson(join(checkout, '.claude-plugin', 'marketplace.json'), 'the marketplace has no readable .claude-plugin/marketplace.json');
}

/** The folder of `plugin` as the marketplace's manifest lists it: a path inside the marketplace, never outside. */
async function pluginFolder(checkout: string, plugin: string): Promise<string> {
  const manifest = await readManifest(checkout);
  const entries = Array.isArray(manifest.plugins) ? (manifest.plugins as Array<Record<string, unknown>>) : [];
  const entry = entries.find((candidate) => candidate.name === plugin);
  if (!entry) throw new Error(`the marketplace lists no plugin named "${plugin}"`);
  if (typeof entry.source !== 'string') throw new Error('its source is not a folder of the marketplace (plugins from other repositories are not supported)');
  const pluginRoot =
    typeof (manifest.metadata as { pluginRoot?: unknown } | undefined)?.pluginRoot === 'string' ? (manifest.metadata as { pluginRoot: string }).pluginRoot : '';
  const source =
    entry.source.startsWith('./') || entry.source.startsWith('../') || entry.source.startsWith('/') ? entry.source : join(pluginRoot, entry.source);
  return inside(checkout, join(checkout, source), `its source ${entry.source}`);
}

async function loadPlugin(plugin: string, root: string): Promise<Extensions & Pick<LoadedPlugins, 'hooks' | 'mcpServers'>> {
  const { commands, skills, agents } = await loadExtensionFolder(plugin, root, root);
  const mcpServers = await pluginMcpServers(plugin, root);
  let hooks: HooksConfig = {};
  const hooksText = await readFile(join(root, 'hooks', 'hooks.json'), 'utf8').catch(() => null);
  if (hooksText !== null) {
    await inside(root, join(root, 'hooks', 'hooks.json'), 'hooks/hooks.json');
    const parsed = parseHooks(hooksText, `${plugin}: hooks/hooks.json`);
    hooks = Object.fromEntries(
      Object.entries(parsed).map(([event, entries]) => [
        event,
        (entries ?? []).map((entry) => ({
          ...entry,
          hooks: entry.hooks.map((hook) => ({ ...hook, command: hook.command.replace(/\$\{CLAUDE_PLUGIN_ROOT\}/g, root) })),
        })),
      ]),
    );
  }
  return { commands, skills, agents, hooks, mcpServers };
}

/**
 * The servers of a plugin's `.mcp.json` (`{"mcpServers": {"name": {"command", "args", "env"}}}`, or `{"type": "http",
 * "url", "headers"}`), with `${CLAUDE_PLUGIN_ROOT}` made the plugin's folder. No other variable is expanded: a
 * plugin's file must not be able to put the agent's environment (its token) into a header or an argument. The legacy
 * SSE transport is refused.
 */
async function pluginMcpServers(plugin: string, root: string): Promise<PluginMcpServer[]> {
  const text = await readFile(join(root, '.mcp.json'), 'utf8').catch(() => null);
  if (text === null) return [];
  await inside(root, join(root, '.mcp.json'), '.mcp.json');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error('.mcp.json is not valid JSON');
  }
  const servers = (parsed as { mcpServers?: unknown } | null)?.mcpServers;
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) throw new Error('.mcp.json has no "mcpServers" object');
  const inRoot = (value: string) => value.replace(/\$\{CLAUDE_PLUGIN_ROOT\}/g, root);
  const strings = (value: unknown) =>
    Object.fromEntries(
      Object.entries((value ?? {}) as Record<string, unknown>)
        .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
        .map(([key, text]) => [key, inRoot(text)]),
    );
  return Object.entries(servers as Record<string, Record<string, unknown>>).map(([name, server]): PluginMcpServer => {
    const type = server?.type ?? (typeof server?.url === 'string' ? 'http' : 'stdio');
    if (type === 'http' || type === 'streamable-http') {
      if (typeof server.url !== 'string' || !URL.canParse(server.url) || !/^https?:$/.test(new URL(server.url).protocol)) {
        throw new Error(`.mcp.json: the MCP server ${name} has no http(s) "url"`);
      }
      return { plugin, name, transport: 'http', url: server.url, headers: strings(server.headers) };
    }
    if (type !== 'stdio')
      throw new Error(`.mcp.json: the MCP server ${name} uses the ${String(type)} transport; only stdio and http (Streamable HTTP) are supported`);
    if (typeof server?.command !== 'string' || server.command === '') throw new Error(`.mcp.json: the MCP server ${name} has no "command"`);
    const args = Array.isArray(server.args) ? server.args.filter((arg): arg is string => typeof arg === 'string').map(inRoot) : [];
    return { plugin, name, transport: 'stdio', command: inRoot(server.command), args, env: strings(server.env) };
  });
}

/**
 * The commands, skills and subagents of a folder laid out as Claude Code's `.claude/` (and a plugin) is:
 * `commands/*.md`, `skills/<name>/SKILL.md`, `agents/*.md` (or `droids/*.md`, as Factory names them). Every
 * file must lie inside `within` (a real path): a link or `..` leading out is refused.
 */
export async function loadExtensionFolder(origin: string, root: string, within: string): Promise<Extensions> {
  const commands: PluginCommand[] = [];
  for (const file of await markdownFiles(join(root, 'commands'))) {
    const { attributes, body } = frontmatter(await readFile(await inside(within, join(root, 'commands', file), `commands/${file}`), 'utf8'));
    commands.push({ plugin: origin, name: basename(file, '.md'), description: stringOf(attributes.description) ?? '', prompt: body });
  }
  const skills: PluginSkill[] = [];
  for (const folder of await folders(join(root, 'skills'))) {
    const dir = await inside(within, join(root, 'skills', folder), `skills/${folder}`);
    const text = await readFile(await inside(dir, join(dir, 'SKILL.md'), `skills/${folder}/SKILL.md`), 'utf8').catch(() => null);
    if (text === null) continue;
    const { attributes } = frontmatter(text);
    const description = stringOf(attributes.description);
    if (!description) throw new Error(`skills/${folder}/SKILL.md has no description in its front matter`);
    skills.push({ plugin: origin, name: stringOf(attributes.name) ?? folder, description, dir });
  }
  const agents: SubagentDefinition[] = [];
  for (const kind of ['agents', 'droids']) {
    for (const file of await markdownFiles(join(root, kind))) {
      const { attributes, body } = frontmatter(await readFile(await inside(within, join(root, kind, file), `${kind}/${file}`), 'utf8'));
      const description = stringOf(attributes.description);
      if (!description) throw new Error(`${kind}/${file} has no description in its front matter`);
      const tools = Array.isArray(attributes.tools)
        ? attributes.tools.filter((tool): tool is string => typeof tool === 'string')
        : typeof attributes.tools === 'string'
          ? attributes.tools
              .split(',')
              .map((tool) => tool.trim())
              .filter(Boolean)
          : undefined;
      const model = stringOf(attributes.model);
      agents.push({
        plugin: origin,
        name: stringOf(attributes.name) ?? basename(file, '.md'),
        description,
        prompt: body.trim(),
        ...(tools ? { tools } : {}),
        ...(model && model !== 'inherit' ? { model } : {}),
      });
    }
  }
  return { commands, skills, agents };
}

/**
 * The extensions of the repository (`.claude/`, `.factory/` in the workspace) and of the user (the same
 * folders in their home, and the agent's settings folder), then the plugins': the first of a name wins.
 * A folder that does not load is said in `problems`, and the others load.
 */
export async function turnExtensions(workspace: string, userFolders: readonly string[], plugins: Extensions): Promise<Extensions & { problems: string[] }> {
  const merged: Extensions & { problems: string[] } = { commands: [], skills: [], agents: [], problems: [] };
  const realWorkspace = await realpath(workspace).catch(() => workspace);
  const sources: Array<[string, string, string]> = [
    ...['.claude', '.factory'].map((dir): [string, string, string] => ['project', join(realWorkspace, dir), realWorkspace]),
    ...userFolders.map((dir): [string, string, string] => ['user', dir, dir]),
  ];
  const all: Extensions[] = [];
  for (const [origin, root, within] of sources) {
    const realWithin = await realpath(within).catch(() => null);
    if (realWithin === null) continue;
    try {
      all.push(await loadExtensionFolder(origin, root, realWithin));
    } catch (error) {
      merged.problems.push(`the ${origin} extensions in ${root} did not load: ${(error as Error).message}`);
    }
  }
  all.push(plugins);
  for (const extensions of all) {
    for (const kind of ['commands', 'skills', 'agents'] as const) {
      for (const item of extensions[kind]) {
        if (!(merged[kind] as Array<{ name: string }>).some((known) => known.name === item.name)) (merged[kind] as Array<typeof item>).push(item);
      }
    }
  }
  return merged;
}

/**
 * The message a command stands for: `/name args` (or `/plugin:name args`) becomes the command's prompt, with
 * `$ARGUMENTS` the whole of args and `$1`..`$9` its words; a prompt that uses neither gets the args after it.
 * Null when the message names no command.
 */
export function expandCommand(text: string, commands: readonly PluginCommand[]): string | null {
  const match = /^\/([\w.-]+(?::[\w.-]+)?)(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (!match) return null;
  const [, name, rest = ''] = match;
  const command = commands.find((candidate) => candidate.name === name || `${candidate.plugin}:${candidate.name}` === name);
  if (!command) return null;
  const args = rest.trim();
  const words = args.split(/\s+/).filter(Boolean);
  const uses = /\$ARGUMENTS|\$[1-9]/.test(command.prompt);
  const prompt = command.prompt.replace(/\$ARGUMENTS/g, args).replace(/\$([1-9])/g, (_, n: string) => words[Number(n) - 1] ?? '');
  return uses || args === '' ? prompt.trim() : `${prompt.trim()}\n\nARGUMENTS: ${args}`;
}

/** `---` YAML front matter, then the body. */
export function frontmatter(text: string): { attributes: Record<string, unknown>; body: string } {
  const match = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!match) return { attributes: {}, body: text };
  const parsed = loadYaml(match[1]);
  return { attributes: parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {}, body: match[2] };
}

/** The real path of `path`, which must be inside `root` (real path): a link or a `..` that leads out is refused. */
export async function inside(root: string, path: string, what: string): Promise<string> {
  const real = await realpath(path).catch(() => {
    throw new Error(`${what} does not exist`);
  });
  if (real !== root && !real.startsWith(root + sep)) throw new Error(`${what} leads outside its folder`);
  return real;
}

async function markdownFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.name.endsWith('.md') && !entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

async function folders(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isDirectory() || entry.isSymbolicLink())
    .map((entry) => entry.name)
    .sort();
}

async function readJson(path: string, missing: string): Promise<Record<string, unknown>> {
  const text = await readFile(path, 'utf8').catch(() => {
    throw new Error(missing);
  });
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new Error(`${path.split(sep).slice(-2).join('/')} is not valid JSON`);
  }
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

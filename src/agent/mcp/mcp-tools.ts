import { createHash } from 'node:crypto';
import { ToolSelection } from '../tools/tool-selection';
import type { AgentPolicy } from '../../contract/agent-channel';

/** An MCP server as the agent policy defines it (its secrets masked). */
export type McpServerDefinition = AgentPolicy['mcpServers'][number];

/** A tool as an MCP server lists it (the parts the agent uses). */
export interface ListedTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** An MCP server's tool as the agent offers it to the model. */
export interface McpTool {
  /** The name the model calls: `mcp__{server}__{tool}`, within the model's rules for tool names. */
  name: string;
  server: string;
  /** The server's URL when it is an HTTP one (mcpAutonomyUrlOverrides match it). */
  url?: string;
  /** The server's own name for it. */
  tool: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** What models accept as a tool name (OpenAI's and Anthropic's rule). */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
export const MCP_PREFIX = 'mcp__';

/** The servers of the policy the agent may use: MCP on, and the server in `mcpPolicy.allowlist` when it lists any. */
export function usableMcpServers(policy: Pick<AgentPolicy, 'mcpPolicy' | 'mcpServers'>): McpServerDefinition[] {
  const { enabled, allowlist } = policy.mcpPolicy;
  if (!enabled) return [];
  return (policy.mcpServers ?? []).filter((server) => allowlist.length === 0 || allowlist.includes(server.name));
}

/** The listed tools `allowedTools` permits (absent: all). */
export function permittedTools(server: Pick<McpServerDefinition, 'allowedTools'>, tools: ListedTool[]): ListedTool[] {
  const allowed = server.allowedTools;
  return allowed === undefined ? tools : tools.filter((tool) => allowed.includes(tool.name));
}

/**
 * `mcp__{server}__{tool}`, made to fit the model's rule for tool names: every other character becomes
 * `_`, and a name longer than 64 characters keeps its first 55 and a hash of the whole (so two long
 * names stay apart). Hook matchers such as `mcp__github__.*` match these names.
 */
export function mcpToolName(server: string, tool: string): string {
  const name = `${MCP_PREFIX}${server}__${tool}`.replace(/[^a-zA-Z0-9_-]/g, '_');
  if (name.length <= 64) return name;
  return `${name.slice(0, 55)}_${createHash('sha256').update(`${server}\u0000${tool}`).digest('hex').slice(0, 8)}`;
}

/**
 * The tools of one server as the agent offers them: those `allowedTools` permits, named for the model,
 * without those the session keeps from the agent (`enabledToolIds`, `disabledToolIds`: by the offered or the
 * `server/tool` name) and without a second tool whose name would clash with one already offered (`taken`, updated).
 */
export function offeredTools(server: McpServerDefinition, listed: ListedTool[], selection: ToolSelection, taken: Set<string>): McpTool[] {
  const offered: McpTool[] = [];
  for (const tool of permittedTools(server, listed)) {
    const name = mcpToolName(server.name, tool.name);
    if (taken.has(name) || !selection.allows(name, { server: server.name, tool: tool.name })) continue;
    taken.add(name);
    offered.push({
      name,
      server: server.name,
      ...('url' in server && typeof server.url === 'string' ? { url: server.url } : {}),
      tool: tool.name,
      description: `${tool.description ?? ''} (tool ${tool.name} of the MCP server ${server.name})`.trim(),
      parameters: toolParameters(tool.inputSchema),
    });
  }
  return offered;
}

/** The tool's input schema as function `parameters`: an object schema (some servers leave out `type` or `properties`). */
function toolParameters(schema: Record<string, unknown> | undefined): Record<string, unknown> {
  // `$schema` names the draft for validators; model APIs take the schema without it.
  const object = { ...(schema && typeof schema === 'object' ? schema : {}) };
  delete object.$schema;
  return { ...object, type: 'object', properties: (object.properties as Record<string, unknown> | undefined) ?? {} };
}

const LEVELS = ['off', 'low', 'medium', 'high'] as const;

/** The organization's autonomy overrides for MCP servers: by name, and by URL pattern for HTTP servers. */
export type McpAutonomyRules = Pick<AgentPolicy, 'mcpAutonomyOverrides' | 'mcpAutonomyUrlOverrides'>;

/**
 * The level a server's tools need, and the setting that says so: `mcpAutonomyOverrides` by the server's
 * name first; else, for an HTTP server, the first `mcpAutonomyUrlOverrides` entry whose `urlPattern`
 * matches its URL (`*` matches any run of characters, `/` included), at its `level` (`off` without one:
 * a server the organization lists by URL is trusted like a reading tool); else `high`.
 */
function neededLevel(server: { name: string; url?: string }, rules: McpAutonomyRules): { level: (typeof LEVELS)[number]; why: string } {
  const byName = rules.mcpAutonomyOverrides;
  if (Object.hasOwn(byName, server.name)) return { level: byName[server.name], why: "the organization's mcpAutonomyOverrides" };
  const byUrl = server.url === undefined ? undefined : rules.mcpAutonomyUrlOverrides.find((entry) => urlMatches(entry.urlPattern, server.url!));
  if (byUrl) return { level: byUrl.level ?? 'off', why: `the organization's mcpAutonomyUrlOverrides (${byUrl.urlPattern})` };
  return { level: 'high', why: 'MCP tools need high unless the organization sets mcpAutonomyOverrides or mcpAutonomyUrlOverrides' };
}

/** Whether a URL matches a pattern in which only `*` is special (any run of characters); the whole URL must match. */
function urlMatches(pattern: string, url: string): boolean {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`, 's').test(url);
}

/**
 * Why the session's `autonomyLevel` keeps an MCP tool from running, or null: the server's tools need the
 * level neededLevel says (`off`: they run at any level, like reading tools). No level: everything the
 * organization allows runs.
 */
export function mcpAutonomyRefusal(level: unknown, server: { name: string; url?: string }, rules: McpAutonomyRules): string | null {
  const have = LEVELS.indexOf(level as (typeof LEVELS)[number]);
  if (have === -1) return null;
  const needed = neededLevel(server, rules);
  if (have >= LEVELS.indexOf(needed.level)) return null;
  return (
    `Refused by the session's autonomyLevel ${String(level)}: the tools of the MCP server ${server.name} need ${needed.level} (${needed.why}). ` +
    'Nothing ran; a user can raise the autonomy level of the session.'
  );
}

/** A tool result of an MCP server, as the text the model gets: text joined, images, audio and resources described. */
export function resultText(content: unknown, structured: unknown, max = MAX_RESULT_CHARACTERS): string {
  const blocks = Array.isArray(content) ? (content as Array<Record<string, unknown>>) : [];
  const parts = blocks.map((block) => {
    switch (block.type) {
      case 'text':
        return String(block.text ?? '');
      case 'image':
      case 'audio':
        return `[${block.type} (${String(block.mimeType ?? 'unknown type')}), ${Math.floor((String(block.data ?? '').length * 3) / 4)} bytes, not shown]`;
      case 'resource': {
        const resource = (block.resource ?? {}) as Record<string, unknown>;
        const head = `[resource ${String(resource.uri ?? '')}${resource.mimeType ? ` (${String(resource.mimeType)})` : ''}]`;
        return typeof resource.text === 'string' ? `${head}\n${resource.text}` : `${head} (binary, not shown)`;
      }
      case 'resource_link':
        return `[resource link ${String(block.uri ?? '')}${block.name ? `: ${String(block.name)}` : ''}]`;
      default:
        return `[${String(block.type)} content, not shown]`;
    }
  });
  let text = parts.join('\n');
  if (text === '' && structured !== undefined) text = JSON.stringify(structured);
  if (text === '') return '(no output)';
  return text.length > max ? `${text.slice(0, max)}\n[output truncated: only its first ${max} characters are shown]` : text;
}

/** Characters of one MCP tool result the model gets. */
export const MAX_RESULT_CHARACTERS = 50_000;

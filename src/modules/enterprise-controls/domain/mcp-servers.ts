import { FieldError } from '../../../platform/http/validation';
import { RESERVED_HEADERS } from './model-secrets';
import { EnterpriseSettings, McpServer } from './settings';
import { mapSettingsSecrets, restoreMaskedIn, SecretHolders } from './settings-secrets';

/**
 * Where an MCP server's secrets go: for an http server the origin of its `url` (the relay sends the
 * headers there), for a stdio server the program and arguments it runs (which receive the env).
 */
export function mcpDestinationOf(server: McpServer): string {
  if (server.transport === 'http') return URL.canParse(server.url) ? new URL(server.url).origin : server.url;
  return `the command ${JSON.stringify([server.command, ...(server.args ?? [])])}`;
}

/** MCP servers in restoring masked secrets: known by `name`, bound to their destination. */
export const MCP_SERVER_SECRETS: SecretHolders<McpServer> = {
  list: 'mcpServers',
  noun: (server) => `MCP server "${server.name}"`,
  key: (server) => server.name,
  destination: (server) => `${server.transport} ${mcpDestinationOf(server)}`,
};

/** Masked header and env values of MCP servers sent back in a change: kept while the server's destination is the same. */
export function restoreMaskedMcpSecrets(after: McpServer[], before: McpServer[]): FieldError[] {
  return restoreMaskedIn(MCP_SERVER_SECRETS, after, before);
}

/** The server's secrets in plain text: what its answers must never quote back through the relay. */
export function mcpSecretsOf(server: McpServer): string[] {
  const values: string[] = [];
  mapSettingsSecrets(server, (value) => (values.push(value), value), ['mcpServers', '0']);
  return values;
}

/**
 * The first tool a relayed JSON-RPC message (or batch) calls that the server's `allowedTools` leaves out; undefined
 * when it calls none (absent `allowedTools`: every tool is allowed, an empty list: none). The agent offers only the
 * allowed tools; this holds the line for a caller that is not our agent (a stolen or a modified one).
 */
export function disallowedToolCall(server: Pick<McpServer, 'allowedTools'>, body: unknown): string | undefined {
  const allowed = server.allowedTools;
  if (allowed === undefined) return undefined;
  for (const message of Array.isArray(body) ? body : [body]) {
    if (!isRecord(message) || message.method !== 'tools/call') continue;
    const name = isRecord(message.params) ? message.params.name : undefined;
    // A name that is not a string is refused too, quoted as it came (`["add"]`, `undefined`), never read as an allowed one.
    if (typeof name !== 'string') return JSON.stringify(name) ?? String(name);
    if (!allowed.includes(name)) return name;
  }
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Headers the MCP relay sets or passes on itself, besides those no relayed request may carry. */
const MCP_RELAY_HEADERS = new Set(['accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id']);

/** Problems of the `mcpServers` list beyond its schema: a name used twice, a header the relay owns or named twice. */
export function mcpServerProblems(settings: EnterpriseSettings): FieldError[] {
  const first = new Map<string, number>();
  return (settings.mcpServers ?? []).flatMap((server, index) => {
    const problems: FieldError[] = [];
    const earlier = first.get(server.name);
    if (earlier === undefined) first.set(server.name, index);
    else problems.push({ field: `settings.mcpServers[${index}].name`, message: `duplicates mcpServers[${earlier}].name; MCP server names are unique` });
    if (server.transport !== 'http') return problems;
    const seen = new Map<string, string>();
    for (const name of Object.keys(server.headers ?? {})) {
      const field = `settings.mcpServers[${index}].headers.${name}`;
      const lower = name.toLowerCase();
      if (RESERVED_HEADERS.has(lower) || MCP_RELAY_HEADERS.has(lower) || lower.startsWith('x-forwarded-') || lower.startsWith('proxy-')) {
        problems.push({ field, message: `names a header the MCP relay sets itself or that changes where a request goes (${lower})` });
        continue;
      }
      const twice = seen.get(lower);
      seen.set(lower, name);
      if (twice !== undefined) problems.push({ field, message: `duplicates headers.${twice} (header names are case-insensitive)` });
    }
    return problems;
  });
}

/** Why the organization's `mcpPolicy` keeps agents from the server (a sentence), or null. */
export function mcpPolicyRefusal(settings: EnterpriseSettings, name: string): string | null {
  const { enabled, allowlist } = settings.mcpPolicy;
  if (!enabled) return "Your organization's mcpPolicy turns MCP off (mcpPolicy.enabled is false).";
  if (allowlist.length > 0 && !allowlist.includes(name)) return `Your organization's mcpPolicy.allowlist does not list the MCP server "${name}".`;
  return null;
}

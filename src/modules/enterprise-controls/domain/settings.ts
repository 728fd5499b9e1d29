import { defaultEnterpriseSettings } from '../../../contract/default-policy';

/**
 * An organization's enterprise settings, as the spec lists them. The spec leaves out which fields
 * are required and the inner shape of the map-valued settings; our decisions are published in the
 * `EnterpriseSettings` JSON Schema and in `/docs`:
 * - every field is always present in a snapshot, except `sessionRetentionDays` (absent: sessions
 *   are kept forever), `sessionDefaultSettings.model`/`specModeModel` (absent: no default) and the
 *   sandbox proxy ports (absent: no proxy);
 * - maps: `mcpAutonomyOverrides` MCP server name → autonomy level; `userModelPolicies` user id →
 *   a partial `modelPolicy` laid over the organization's for that user; `enabledPlugins`
 *   `plugin@marketplace` → on/off; `extraKnownMarketplaces` name → `{source, repo, ref?}`.
 */
export interface EnterpriseSettings {
  sessionDefaultSettings: SessionDefaultSettings;
  mcpAutonomyOverrides: Record<string, McpAutonomyLevel>;
  mcpAutonomyUrlOverrides: Array<{ urlPattern: string; level?: McpAutonomyLevel }>;
  cloudSessionSync: boolean;
  wikiCloudSync: boolean;
  includeCoAuthoredByAgent: boolean;
  enableAgentShield: boolean;
  ideAutoConnect: boolean;
  commandAllowlist: string[];
  commandDenylist: string[];
  commandBlocklist: string[];
  customModels: CustomModel[];
  modelPolicy: ModelPolicy;
  mcpPolicy: { enabled: boolean; allowlist: string[] };
  missionPolicy: { restrictedAccess: boolean; allowedUserIds: string[] };
  userModelPolicies: Record<string, Partial<ModelPolicy>>;
  enabledPlugins: Record<string, boolean>;
  extraKnownMarketplaces: Record<string, { source: CodeHost; repo: string; ref?: string }>;
  strictKnownMarketplaces: Array<{ source: CodeHost; repo: string; ref: string; sha: string }>;
  networkPolicy: { allowedIps: string[] };
  sandbox: Sandbox;
  restrictMemberVisibility: boolean;
  restrictApiKeyCreationToManagers: boolean;
  managedComputersEnabled: boolean;
  managedComputersAllowedEmails: string[];
  byomComputersEnabled: boolean;
  byomComputersAllowedEmails: string[];
  disableAutoUpdate: boolean;
  sessionRetentionDays?: number;
  serviceRouterGuidance: string;
  serviceRouterRules: Array<{ guidance: string; when: string }>;
  /** Tool calls agents must have a person approve before running them; absent: none. */
  toolApproval?: { tools?: string[]; commandPatterns?: string[]; timeoutSeconds?: number };
  /** The MCP servers agents connect to (under `mcpPolicy`); absent: none. */
  mcpServers?: McpServer[];
}

/** An MCP server agents start on their computer (stdio); `env` values are secrets. */
export interface StdioMcpServer {
  name: string;
  transport: 'stdio';
  command: string;
  args?: string[];
  /** Plain text only in memory; encrypted at rest, masked in every answer but the launch endpoint's. */
  env?: Record<string, string>;
  allowedTools?: string[];
}

/** An MCP server agents reach through the server's MCP relay (Streamable HTTP); `headers` values are secrets. */
export interface HttpMcpServer {
  name: string;
  transport: 'http';
  url: string;
  /** Plain text only in memory; encrypted at rest, masked in every answer; only the relay sends them. */
  headers?: Record<string, string>;
  allowedTools?: string[];
}

export type McpServer = StdioMcpServer | HttpMcpServer;

/** What an MCP server's `name` may be: it becomes part of the agent's tool names (`mcp__{name}__{tool}`). */
export const MCP_SERVER_NAME = '^[A-Za-z0-9_-]{1,64}$';

export interface SessionDefaultSettings {
  model?: string;
  specModeModel?: string;
  runInWorktree: boolean;
}

export interface ModelPolicy {
  allowedModelIds: string[];
  blockedModelIds: string[];
  allowCustomModels: boolean;
  allowedBaseUrls: string[];
  allowAllServiceModels: boolean;
  isFastModelsAllowed: boolean;
  requireExplicitOptInModelIds: string[];
  allowServiceRouterByok: boolean;
}

export interface CustomModel {
  id: string;
  model: string;
  baseUrl: string;
  /** Plain text only in memory; encrypted at rest, masked in every answer. */
  apiKey?: string;
  index?: number;
  displayName?: string;
  maxContextLimit?: number;
  enableThinking?: boolean;
  thinkingMaxTokens?: number;
  maxOutputTokens?: number;
  extraHeaders?: Record<string, string>;
  extraArgs?: Record<string, unknown>;
  noImageSupport?: boolean;
  cloudModelConfig?: Partial<Record<(typeof CLOUD_MODEL_CONFIG_FIELDS)[number], string>>;
  baseModelId?: string;
  useInRouter?: boolean;
  /** The API the vendor serves; absent: `generic-chat-completion-api`. */
  provider?: CustomModelProvider;
}

/** The organization's sandbox settings, as enterprise controls store them (the agent policy hands them to agents). */
export interface Sandbox {
  enabled: boolean;
  filesystem: { allowWrite: string[]; allowRead: string[]; denyWrite: string[]; denyRead: string[] };
  network: {
    allowedDomains: string[];
    allowUnixSockets: string[];
    allowAllUnixSockets: boolean;
    allowLocalBinding: boolean;
    httpProxyPort?: number;
    socksProxyPort?: number;
  };
}

export const MCP_AUTONOMY_LEVELS = ['off', 'low', 'medium', 'high'] as const;
export type McpAutonomyLevel = (typeof MCP_AUTONOMY_LEVELS)[number];

/** The spec's "code-hosting kind" values for marketplaces: ours. */
export const CODE_HOSTS = ['github', 'gitlab', 'bitbucket', 'git'] as const;
export type CodeHost = (typeof CODE_HOSTS)[number];

export const CLOUD_MODEL_CONFIG_FIELDS = ['cloudProfile', 'cloudRegion', 'cloudBaseUrl', 'cloudAuthRefresh', 'cloudCredentialExport'] as const;

/** The APIs a custom model's vendor may serve (not in the spec): what the relay speaks to it. */
export const CUSTOM_MODEL_PROVIDERS = ['generic-chat-completion-api', 'anthropic'] as const;
export type CustomModelProvider = (typeof CUSTOM_MODEL_PROVIDERS)[number];

/** Bounds on what one snapshot may hold, so a change cannot make every request slow. */
export const SETTINGS_LIMITS = {
  /** Entries of any list of strings (commands, ids, emails, domains, paths, IPs). */
  listItems: 1000,
  /** Characters of any one string, unless named below. */
  string: 2048,
  customModels: 100,
  mcpServers: 50,
  /** Entries of any map-valued setting, and of a custom model's `extraHeaders`/`extraArgs`. */
  mapEntries: 500,
  serviceRouterRules: 100,
  /** Characters of `serviceRouterGuidance` and of one rule's `guidance`. */
  guidance: 16_384,
  retentionDays: { min: 1, max: 36_500 },
  /** The whole snapshot, serialized as JSON. */
  snapshotBytes: 1024 * 1024,
} as const;

/** A new organization's settings: nothing restricted that was open before the controls existed (src/contract, shared with the agent). */
export function defaultSettings(): EnterpriseSettings {
  return defaultEnterpriseSettings();
}

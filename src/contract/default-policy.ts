/**
 * The open defaults of the enterprise controls, and how an agent policy is made of settings: the server serves a new
 * organization these settings (and publishes them as the `EnterpriseSettings` schema's `default`), and the agent runs
 * `exec` without a server under the policy they make. Both import this module, so the two cannot drift apart.
 */
import type { AgentPolicy } from './agent-channel';

/**
 * A new organization's settings: nothing restricted that was open before the controls existed. Their order is the
 * published `default`'s. The type is the literal's own: the server's settings type and the agent's policy type each
 * check what they take of it.
 */
export function defaultEnterpriseSettings() {
  return {
    sessionDefaultSettings: { runInWorktree: false },
    mcpAutonomyOverrides: {},
    mcpAutonomyUrlOverrides: [],
    cloudSessionSync: true,
    wikiCloudSync: true,
    includeCoAuthoredByAgent: true,
    enableAgentShield: true,
    ideAutoConnect: true,
    commandAllowlist: [],
    commandDenylist: [],
    commandBlocklist: [],
    customModels: [],
    modelPolicy: {
      allowedModelIds: [],
      blockedModelIds: [],
      allowCustomModels: true,
      allowedBaseUrls: [],
      allowAllServiceModels: true,
      isFastModelsAllowed: true,
      requireExplicitOptInModelIds: [],
      allowServiceRouterByok: false,
    },
    mcpPolicy: { enabled: true, allowlist: [] },
    missionPolicy: { restrictedAccess: false, allowedUserIds: [] },
    userModelPolicies: {},
    enabledPlugins: {},
    extraKnownMarketplaces: {},
    strictKnownMarketplaces: [],
    networkPolicy: { allowedIps: [] },
    sandbox: {
      enabled: false,
      filesystem: { allowWrite: [], allowRead: [], denyWrite: [], denyRead: [] },
      network: { allowedDomains: [], allowUnixSockets: [], allowAllUnixSockets: false, allowLocalBinding: false },
    },
    restrictMemberVisibility: false,
    restrictApiKeyCreationToManagers: false,
    managedComputersEnabled: true,
    managedComputersAllowedEmails: [],
    byomComputersEnabled: true,
    byomComputersAllowedEmails: [],
    disableAutoUpdate: false,
    serviceRouterGuidance: '',
    serviceRouterRules: [],
  };
}

/**
 * The settings an agent obeys, served on the agent channel as one document (with `modelPolicy`). Controls the server
 * enforces itself (visibility, API keys, computers, retention) and admin lists stay out.
 */
export const AGENT_POLICY_FIELDS = [
  'commandAllowlist',
  'commandDenylist',
  'commandBlocklist',
  'sandbox',
  'networkPolicy',
  'mcpPolicy',
  'mcpAutonomyOverrides',
  'mcpAutonomyUrlOverrides',
  'mcpServers',
  'customModels',
  'sessionDefaultSettings',
  'enabledPlugins',
  'extraKnownMarketplaces',
  'strictKnownMarketplaces',
  'includeCoAuthoredByAgent',
  'enableAgentShield',
  'ideAutoConnect',
  'disableAutoUpdate',
  'cloudSessionSync',
  'wikiCloudSync',
  'serviceRouterGuidance',
  'serviceRouterRules',
] as const;

/** What `agentPolicyOf` reads of a settings document (validated against the `EnterpriseSettings` schema by its owner). */
export type AgentPolicySettings = { readonly [Field in (typeof AGENT_POLICY_FIELDS)[number]]?: unknown } & { readonly toolApproval?: unknown };

/**
 * The policy `settings` make for an agent: their AGENT_POLICY_FIELDS, `modelPolicy` (the caller's effective one), the
 * revision they are, `mcpServers` (none when absent) and `toolApproval` when set.
 */
export function agentPolicyOf(settings: AgentPolicySettings, modelPolicy: AgentPolicy['modelPolicy'], revision: number): AgentPolicy {
  const fields = Object.fromEntries(AGENT_POLICY_FIELDS.map((field) => [field, settings[field]]));
  // The settings' schema is the policy's (AgentPolicy takes its fields' schemas from EnterpriseSettings).
  return {
    revision,
    ...fields,
    modelPolicy,
    mcpServers: settings.mcpServers ?? [],
    ...(settings.toolApproval ? { toolApproval: settings.toolApproval } : {}),
  } as AgentPolicy;
}

/** The policy of the open defaults, at revision 0: what a run without a server starts from. */
export function defaultAgentPolicy(): AgentPolicy {
  const settings = defaultEnterpriseSettings();
  return agentPolicyOf(settings, settings.modelPolicy, 0);
}

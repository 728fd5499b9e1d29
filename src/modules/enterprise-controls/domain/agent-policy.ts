import type { ApiSchema } from '../../../platform/http/api-schema';
import { EnterpriseSettings } from './settings';

/**
 * The settings an agent obeys, served on the agent channel as one document. Controls the server
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
] as const satisfies ReadonlyArray<keyof EnterpriseSettings>;

/** `modelPolicy` is the caller's effective one: the organization's with their `userModelPolicies` entry over it. */
export type AgentPolicyView = ApiSchema<'AgentPolicy'>;

import { AGENT_POLICY_FIELDS as FIELDS } from '../../../contract/default-policy';
import type { ApiSchema } from '../../../platform/http/api-schema';
import { EnterpriseSettings } from './settings';

export { agentPolicyOf } from '../../../contract/default-policy';

/**
 * The settings an agent obeys, served on the agent channel as one document (src/contract, shared with the agent's
 * headless mode). Controls the server enforces itself (visibility, API keys, computers, retention) and admin lists stay out.
 */
export const AGENT_POLICY_FIELDS = FIELDS satisfies ReadonlyArray<keyof EnterpriseSettings>;

/** `modelPolicy` is the caller's effective one: the organization's with their `userModelPolicies` entry over it. */
export type AgentPolicyView = ApiSchema<'AgentPolicy'>;

import type { Role } from '../api/client';
import { useAgentPolicy } from '../api/controls';

/**
 * How the console names a model: a custom model of the organization by its `displayName`, any other by its id.
 * The names come from the agent policy, which every role but guests may read; guests see ids.
 */
export function useModelNames(role: Role): (modelId: string) => string {
  const policy = useAgentPolicy({ enabled: role !== 'guest' });
  const names = new Map((policy.data?.customModels ?? []).flatMap((model) => (model.displayName ? [[model.id, model.displayName] as const] : [])));
  return (modelId) => names.get(modelId) ?? modelId;
}

import { useQuery } from '@tanstack/react-query';
import { api, unwrap, type Role } from '../api/client';

/**
 * How the console names a model: a custom model of the organization by its `displayName`, any other by its id.
 * The names come from the agent policy, which every role but guests may read; guests see ids.
 */
export function useModelNames(role: Role): (modelId: string) => string {
  const policy = useQuery({
    queryKey: ['agent-policy'],
    enabled: role !== 'guest',
    staleTime: 60_000,
    queryFn: () => unwrap(api.GET('/api/v0/agent/policy')),
  });
  const names = new Map((policy.data?.customModels ?? []).flatMap((model) => (model.displayName ? [[model.id, model.displayName] as const] : [])));
  return (modelId) => names.get(modelId) ?? modelId;
}

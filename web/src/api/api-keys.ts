import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap, type Schemas } from './client';

export type ApiKeyScope = 'own' | 'organization';

/** The API keys' query keys: every list (`all`, what a new or revoked key makes stale) and one scope's. */
export const apiKeyKeys = {
  all: ['api-keys'] as const,
  list: (scope: ApiKeyScope) => ['api-keys', scope] as const,
};

const PAGE_SIZE = 20;

/** Your keys, or (owners and managers) every key of the organization, paged as the API pages. */
export function useApiKeys(scope: ApiKeyScope) {
  return useInfiniteQuery({
    queryKey: apiKeyKeys.list(scope),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/settings/api-keys', { params: { query: { scope, limit: String(PAGE_SIZE), ...(pageParam ? { cursor: pageParam } : {}) } } })),
    getNextPageParam: (page) => page.pagination.nextCursor ?? undefined,
  });
}

/** Creates a key of yours; the answer carries the key, shown once. */
export function useCreateApiKey(options: { onSuccess: (key: Schemas['CreatedApiKeyView']) => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (body: Schemas['CreateApiKeyBody']) => unwrap(api.POST('/settings/api-keys', { body })),
    onSuccess: (key) => {
      void queries.invalidateQueries({ queryKey: apiKeyKeys.all });
      options.onSuccess(key);
    },
  });
}

/**
 * Revokes a key. `current`: it is the key this tab is signed in with, so the caller signs out (which empties the
 * cache) and nothing is read again with it.
 */
export function useRevokeApiKey(options: { current: boolean; onSuccess: () => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (key: Schemas['ApiKeyView']) => unwrap(api.DELETE('/settings/api-keys/{apiKeyId}', { params: { path: { apiKeyId: key.id } } })),
    onSuccess: () => {
      if (!options.current) void queries.invalidateQueries({ queryKey: apiKeyKeys.all });
      options.onSuccess();
    },
  });
}

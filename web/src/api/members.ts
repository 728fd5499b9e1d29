import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { apiKeyKeys } from './api-keys';
import { api, unwrap, type Role, type Schemas } from './client';

type Member = Schemas['MemberView'];
export type MemberKind = Member['kind'];

/** The members' query keys: every list (`all`, what a change makes stale), the pages of one kind, and the first 100 (names of key owners). */
export const memberKeys = {
  all: ['members'] as const,
  list: (kind: MemberKind | 'all') => ['members', 'list', kind] as const,
  first100: ['members', 'first-100'] as const,
};

const PAGE_SIZE = 20;

/** The organization's members, of one kind or all, paged as the API pages. */
export function useMembers(kind: MemberKind | 'all') {
  return useInfiniteQuery({
    queryKey: memberKeys.list(kind),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v0/organization/members', {
          params: { query: { limit: String(PAGE_SIZE), ...(kind !== 'all' ? { kind } : {}), ...(pageParam ? { cursor: pageParam } : {}) } },
        }),
      ),
    getNextPageParam: (page) => page.pagination.nextCursor ?? undefined,
  });
}

/** The first 100 members, one page: enough to name the users of the keys an owner or manager lists. */
export function useFirstMembers({ enabled }: { enabled: boolean }) {
  return useQuery({
    queryKey: memberKeys.first100,
    enabled,
    queryFn: () => unwrap(api.GET('/api/v0/organization/members', { params: { query: { limit: '100' } } })),
  });
}

export function useAddMember(options: { onSuccess: (member: Member) => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (body: Schemas['AddMemberBody']) => unwrap(api.POST('/api/v0/organization/members', { body })),
    onSuccess: (member) => {
      options.onSuccess(member);
      void queries.invalidateQueries({ queryKey: memberKeys.all });
    },
  });
}

/** Changes a member's role; the mutation is pending until the lists are read again and `onSuccess` (your own role: who you are, again) is done. */
export function useChangeMemberRole(userId: string, options: { onSuccess: () => Promise<void>; onError: () => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (role: Role) => unwrap(api.PATCH('/api/v0/organization/members/{userId}', { params: { path: { userId } }, body: { role } })),
    onSuccess: async () => {
      await queries.invalidateQueries({ queryKey: memberKeys.all });
      await options.onSuccess();
    },
    onError: () => options.onError(),
  });
}

/**
 * Removes a member (every key of theirs is revoked). `yourself`: the caller signs out (which empties the cache) and
 * nothing is read again with a key that no longer works.
 */
export function useRemoveMember(options: { yourself: boolean; onSuccess: () => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (member: Member) => unwrap(api.DELETE('/api/v0/organization/members/{userId}', { params: { path: { userId: member.id } } })),
    onSuccess: () => {
      if (!options.yourself) void queries.invalidateQueries({ queryKey: memberKeys.all });
      options.onSuccess();
    },
  });
}

/** A key for a service account, shown once; the API keys lists are read again. */
export function useCreateServiceAccountKey(options: { onSuccess: (key: Schemas['CreatedApiKeyView'], member: Member) => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: ({ member, name }: { member: Member; name: string }) =>
      unwrap(api.POST('/api/v0/organization/members/{userId}/api-keys', { params: { path: { userId: member.id } }, body: { name } })),
    onSuccess: (key, { member }) => {
      void queries.invalidateQueries({ queryKey: apiKeyKeys.all });
      options.onSuccess(key, member);
    },
  });
}

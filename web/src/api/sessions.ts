import { useInfiniteQuery, useMutation, useQuery, useQueryClient, type InfiniteData } from '@tanstack/react-query';
import type { WireMessage } from '../sessions/blocks';
import { api, unwrap, type Schemas } from './client';

/**
 * The agent sessions' query keys (not the signed-in user's: that is auth/): the list by computer, one session, its
 * messages, its tool approvals and its owner.
 */
export const sessionKeys = {
  list: (computerId: string | undefined) => ['sessions', computerId ?? null] as const,
  detail: (sessionId: string) => ['session', sessionId] as const,
  messages: (sessionId: string) => ['messages', sessionId] as const,
  toolApprovals: (sessionId: string) => ['tool-approvals', sessionId] as const,
  owner: (sessionId: string) => ['session-owner', sessionId] as const,
};

const SESSIONS_PAGE_SIZE = 20;
const MESSAGES_PAGE_SIZE = 30;

export interface MessagePage {
  messages: WireMessage[];
  pagination: { hasMore: boolean; nextCursor: string | null };
}

/** The sessions the user may read, newest first, paged by the API's cursor; only `computerId`'s when given. */
export function useSessions(computerId: string | undefined) {
  return useInfiniteQuery({
    queryKey: sessionKeys.list(computerId),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v0/sessions', {
          params: { query: { limit: String(SESSIONS_PAGE_SIZE), ...(pageParam ? { cursor: pageParam } : {}), ...(computerId ? { computerId } : {}) } },
        }),
      ),
    getNextPageParam: (page) => page.pagination.nextCursor ?? undefined,
  });
}

export function useSession(sessionId: string) {
  return useQuery({
    queryKey: sessionKeys.detail(sessionId),
    queryFn: () => unwrap(api.GET('/api/v0/sessions/{sessionId}', { params: { path: { sessionId } } })),
  });
}

/** The session's messages, newest first from the API (`order=newest`); each next page is older. */
export function useMessages(sessionId: string) {
  return useInfiniteQuery({
    queryKey: sessionKeys.messages(sessionId),
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      (await unwrap(
        api.GET('/api/v0/sessions/{sessionId}/messages', {
          params: { path: { sessionId }, query: { limit: String(MESSAGES_PAGE_SIZE), order: 'newest', ...(pageParam ? { cursor: pageParam } : {}) } },
        }),
      )) as unknown as MessagePage,
    getNextPageParam: (page) => page.pagination.nextCursor ?? undefined,
  });
}

/** What the session's live events change in the cache. */
export function useSessionCache(sessionId: string) {
  const queries = useQueryClient();
  const invalidate = (queryKey: readonly unknown[]) => void queries.invalidateQueries({ queryKey });
  return {
    /** Status, interrupt, usage, approvals waiting, message count: all on the session itself. */
    sessionChanged: () => invalidate(sessionKeys.detail(sessionId)),
    toolApprovalsChanged: () => invalidate(sessionKeys.toolApprovals(sessionId)),
    /** The stream started afresh: what is shown may have missed events. */
    readAgain: () => {
      invalidate(sessionKeys.detail(sessionId));
      invalidate(sessionKeys.messages(sessionId));
      invalidate(sessionKeys.toolApprovals(sessionId));
    },
    /** A message was added: put it first (newest) unless it is known; read the messages again when the event carried none. */
    messageAdded: (message: WireMessage | undefined) => {
      if (message) {
        queries.setQueryData<InfiniteData<MessagePage>>(sessionKeys.messages(sessionId), (data) => {
          if (!data || data.pages.some((page) => page.messages.some((known) => known.id === message.id))) return data;
          const [first, ...rest] = data.pages;
          return { ...data, pages: [{ ...first, messages: [message, ...first.messages] }, ...rest] };
        });
      } else invalidate(sessionKeys.messages(sessionId));
    },
  };
}

/** Starts a session (on `computerId` when given). */
export function useCreateSession(options: { onSuccess: (session: Schemas['Session']) => void }) {
  return useMutation({
    mutationFn: (computerId: string | undefined) => unwrap(api.POST('/api/v0/sessions', { body: computerId ? { computerId } : {} })),
    onSuccess: (session) => options.onSuccess(session),
  });
}

export function useInterruptSession(sessionId: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.POST('/api/v0/sessions/{sessionId}/interrupt', { params: { path: { sessionId } } })),
    onSuccess: (session) => queries.setQueryData(sessionKeys.detail(sessionId), session),
  });
}

export function useAddMessage(sessionId: string, options: { onSuccess: () => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (body: Schemas['AddMessageBody']) => unwrap(api.POST('/api/v0/sessions/{sessionId}/messages', { params: { path: { sessionId } }, body })),
    onSuccess: () => {
      options.onSuccess();
      void queries.invalidateQueries({ queryKey: sessionKeys.detail(sessionId) });
    },
  });
}

export function useToolApprovals(sessionId: string) {
  return useQuery({
    queryKey: sessionKeys.toolApprovals(sessionId),
    queryFn: () => unwrap(api.GET('/api/v0/sessions/{sessionId}/tool-approvals', { params: { path: { sessionId } } })),
  });
}

/** Allows or denies a tool call, with an optional message to the agent; the approvals and the session are read again either way. */
export function useDecideToolApproval(approval: Pick<Schemas['ToolApproval'], 'sessionId' | 'approvalId'>) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: ({ decision, message }: { decision: 'allow' | 'deny'; message: string }) =>
      unwrap(
        api.POST('/api/v0/sessions/{sessionId}/tool-approvals/{approvalId}', {
          params: { path: { sessionId: approval.sessionId, approvalId: approval.approvalId } },
          body: { decision, ...(message.trim() ? { message: message.trim() } : {}) },
        }),
      ),
    onSettled: () => {
      void queries.invalidateQueries({ queryKey: sessionKeys.toolApprovals(approval.sessionId) });
      void queries.invalidateQueries({ queryKey: sessionKeys.detail(approval.sessionId) });
    },
  });
}

/**
 * Who made the session, from its `session.created` event (`data.ownerId`; the spec's Session has no owner): null when
 * the log no longer holds that event (EVENT_RETENTION_DAYS).
 */
export function useSessionOwner(sessionId: string, { enabled }: { enabled: boolean }) {
  return useQuery({
    queryKey: sessionKeys.owner(sessionId),
    enabled,
    staleTime: Infinity,
    queryFn: async () => {
      const page = await unwrap(
        api.GET('/api/v0/sessions/{sessionId}/events', { params: { path: { sessionId }, query: { types: 'session.created', limit: '1' } } }),
      );
      const created = (page as unknown as { events: { type: string; data: { ownerId?: unknown } }[] }).events.find((event) => event.type === 'session.created');
      return typeof created?.data.ownerId === 'string' ? created.data.ownerId : null;
    },
  });
}

import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, done, unwrap, type Schemas } from './client';
import { useEventStream, type StreamState } from './event-stream';

export type WorkerPool = Schemas['WorkerPoolView'];
export type Worker = Schemas['WorkerView'];
export type EnrollmentToken = Schemas['EnrollmentTokenView'];
export type CreatedEnrollmentToken = Schemas['CreatedEnrollmentTokenView'];

/** The worker pools' query keys: every list (`all`), one pool, its workers and its enrollment tokens. */
export const poolKeys = {
  all: ['worker-pools'] as const,
  first100: ['worker-pools', 'first-100'] as const,
  detail: (poolId: string) => ['worker-pool', poolId] as const,
  workers: (poolId: string) => ['worker-pool', poolId, 'workers'] as const,
  tokens: (poolId: string) => ['worker-pool', poolId, 'tokens'] as const,
};

/** What the pools pages follow live (owners and managers see these events; so do only they see the pages). */
export const POOL_EVENTS = [
  'worker_pool.created',
  'worker_pool.updated',
  'worker_pool.deleted',
  'enrollment_token.created',
  'enrollment_token.revoked',
  'worker.joined',
  'worker.left',
] as const;

const PAGE_SIZE = 20;

/** The organization's pools (owners and managers; others get 403), paged as the API pages. */
export function useWorkerPools() {
  return useInfiniteQuery({
    queryKey: poolKeys.all,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/api/v0/worker-pools', { params: { query: { limit: String(PAGE_SIZE), ...(pageParam ? { cursor: pageParam } : {}) } } })),
    getNextPageParam: (page) => page.pagination.nextCursor ?? undefined,
  });
}

/** The first 100 pools, one page: the choices of the create-computer form (an organization has 20 by default). */
export function useFirstWorkerPools({ enabled }: { enabled: boolean }) {
  return useQuery({
    queryKey: poolKeys.first100,
    enabled,
    queryFn: () => unwrap(api.GET('/api/v0/worker-pools', { params: { query: { limit: '100' } } })),
  });
}

export function useWorkerPool(poolId: string) {
  return useQuery({
    queryKey: poolKeys.detail(poolId),
    queryFn: () => unwrap(api.GET('/api/v0/worker-pools/{poolId}', { params: { path: { poolId } } })),
  });
}

export function useWorkers(poolId: string) {
  return useInfiniteQuery({
    queryKey: poolKeys.workers(poolId),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v0/worker-pools/{poolId}/workers', {
          params: { path: { poolId }, query: { limit: String(PAGE_SIZE), ...(pageParam ? { cursor: pageParam } : {}) } },
        }),
      ),
    getNextPageParam: (page) => page.pagination.nextCursor ?? undefined,
  });
}

export function useEnrollmentTokens(poolId: string) {
  return useInfiniteQuery({
    queryKey: poolKeys.tokens(poolId),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v0/worker-pools/{poolId}/enrollment-tokens', {
          params: { path: { poolId }, query: { limit: String(PAGE_SIZE), ...(pageParam ? { cursor: pageParam } : {}) } },
        }),
      ),
    getNextPageParam: (page) => page.pagination.nextCursor ?? undefined,
  });
}

/** Follows the pools' events: the lists (or one pool, its workers and tokens) are read again on each, and when the stream (re)opens. */
export function useWorkerPoolsLive(poolId?: string): StreamState {
  const queries = useQueryClient();
  const refresh = () => {
    void queries.invalidateQueries({ queryKey: poolKeys.all });
    if (poolId) void queries.invalidateQueries({ queryKey: poolKeys.detail(poolId) });
  };
  return useEventStream(
    POOL_EVENTS,
    (event) => {
      if (!poolId || ('poolId' in event.data && event.data.poolId === poolId)) refresh();
    },
    refresh,
  );
}

export function useCreateWorkerPool(options: { onSuccess: (pool: WorkerPool) => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (body: Schemas['CreateWorkerPoolBody']) => unwrap(api.POST('/api/v0/worker-pools', { body })),
    onSuccess: (pool) => {
      void queries.invalidateQueries({ queryKey: poolKeys.all });
      options.onSuccess(pool);
    },
  });
}

export function useUpdateWorkerPool(poolId: string, options: { onSuccess: (pool: WorkerPool) => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (body: Schemas['UpdateWorkerPoolBody']) => unwrap(api.PATCH('/api/v0/worker-pools/{poolId}', { params: { path: { poolId } }, body })),
    onSuccess: (pool) => {
      queries.setQueryData(poolKeys.detail(poolId), pool);
      void queries.invalidateQueries({ queryKey: poolKeys.all });
      options.onSuccess(pool);
    },
  });
}

/** Deletes a pool with its tokens and workers; 409 `worker_pool_in_use` while computers were created for it. */
export function useDeleteWorkerPool(poolId: string, options: { onSuccess: () => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: () => done(api.DELETE('/api/v0/worker-pools/{poolId}', { params: { path: { poolId } } })),
    onSuccess: () => {
      queries.removeQueries({ queryKey: poolKeys.detail(poolId) });
      void queries.invalidateQueries({ queryKey: poolKeys.all });
      options.onSuccess();
    },
  });
}

/** Creates an enrollment token; the answer carries the token, shown once. */
export function useCreateEnrollmentToken(poolId: string, options: { onSuccess: (token: CreatedEnrollmentToken) => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (body: Schemas['CreateEnrollmentTokenBody']) =>
      unwrap(api.POST('/api/v0/worker-pools/{poolId}/enrollment-tokens', { params: { path: { poolId } }, body })),
    onSuccess: (token) => {
      void queries.invalidateQueries({ queryKey: poolKeys.tokens(poolId) });
      options.onSuccess(token);
    },
  });
}

/** Revokes a token: it registers no more workers, and every worker registered with it is ended at once. */
export function useRevokeEnrollmentToken(poolId: string, options: { onSuccess: () => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (token: EnrollmentToken) =>
      unwrap(api.DELETE('/api/v0/worker-pools/{poolId}/enrollment-tokens/{tokenId}', { params: { path: { poolId, tokenId: token.id } } })),
    onSuccess: () => {
      void queries.invalidateQueries({ queryKey: poolKeys.detail(poolId) });
      options.onSuccess();
    },
  });
}

/** Evicts a worker: its session ends at once and its computers are placed again. */
export function useEvictWorker(poolId: string, options: { onSuccess: () => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (worker: Worker) =>
      unwrap(api.DELETE('/api/v0/worker-pools/{poolId}/workers/{workerId}', { params: { path: { poolId, workerId: worker.id } } })),
    onSuccess: () => {
      void queries.invalidateQueries({ queryKey: poolKeys.workers(poolId) });
      options.onSuccess();
    },
  });
}

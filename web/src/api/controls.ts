import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiProblem, done, unwrap, type Schemas } from './client';

/**
 * The enterprise controls and what hangs off them: their revisions, the plugin catalog agents report, the OAuth
 * sign-ins of HTTP MCP servers, and the agent policy (the custom models' names).
 */
export const controlKeys = {
  current: ['enterprise-controls'] as const,
  history: ['enterprise-controls-history'] as const,
  revision: (revision: number) => ['enterprise-controls-revision', revision] as const,
  plugins: ['enterprise-controls-plugins'] as const,
  mcpOAuth: (serverName: string) => ['mcp-oauth', serverName] as const,
  agentPolicy: ['agent-policy'] as const,
};

type Controls = Schemas['EnterpriseControls'];
/** The controls as read, with the `ETag` to send back as `If-Match`. */
export interface Snapshot {
  controls: Controls;
  etag: string;
}

export async function readControls(): Promise<Snapshot> {
  const { data, error, response } = await api.GET('/api/v0/organization/enterprise-controls');
  if (!response.ok || !data) throw problem(response, error);
  return { controls: data, etag: response.headers.get('etag') ?? `"${data.revision}"` };
}

function problem(response: Response, body: unknown): ApiProblem {
  const b = (typeof body === 'object' && body !== null ? body : {}) as { title?: string; detail?: string; metadata?: Record<string, unknown> };
  return new ApiProblem(
    response.status,
    b.title ?? `HTTP ${response.status}`,
    b.detail ?? '',
    response.headers.get('x-request-id'),
    b.metadata?.code as string | undefined,
    b.metadata ?? {},
  );
}

/** Read once: the form works on its own copy, and a save or a conflict puts the new revision here. */
export function useControls() {
  return useQuery({ queryKey: controlKeys.current, queryFn: readControls, staleTime: Infinity, refetchOnWindowFocus: false });
}

/** Puts a revision read elsewhere (the one that won a conflict) in the cache as the controls in force. */
export function useKeepControls(): (snapshot: Snapshot) => void {
  const queries = useQueryClient();
  return (snapshot) => queries.setQueryData(controlKeys.current, snapshot);
}

/**
 * Saves a change as a JSON Merge Patch, `If-Match` the revision it was made on: someone else's save in between is a
 * 412 (or 409), nothing written. A saved revision goes in the cache; the history and the plugin catalog are read again.
 */
export function useSaveControls(options: { onSuccess: (next: Snapshot) => void; onError: (error: Error) => Promise<void> }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async ({ patch, etag }: { patch: Record<string, unknown>; etag: string }): Promise<Snapshot> => {
      const { data, error, response } = await api.PATCH('/api/v0/organization/enterprise-controls', {
        body: { settings: patch as Record<string, never> },
        headers: { 'If-Match': etag },
      });
      if (!response.ok || !data) throw problem(response, error);
      return { controls: data, etag: response.headers.get('etag') ?? `"${data.revision}"` };
    },
    onSuccess: (next) => {
      options.onSuccess(next);
      queries.setQueryData(controlKeys.current, next);
      void queries.invalidateQueries({ queryKey: controlKeys.history });
      void queries.invalidateQueries({ queryKey: controlKeys.plugins });
    },
    onError: (error) => options.onError(error),
  });
}

const HISTORY_PAGE_SIZE = 20;

/** Every revision, newest first, paged as the API pages. */
export function useControlsHistory() {
  return useInfiniteQuery({
    queryKey: controlKeys.history,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v0/organization/enterprise-controls/history', {
          params: { query: { limit: String(HISTORY_PAGE_SIZE), ...(pageParam ? { cursor: pageParam } : {}) } },
        }),
      ),
    getNextPageParam: (page) => page.pagination.nextCursor ?? undefined,
  });
}

/** One revision's settings and diff: a revision never changes. */
export function useControlsRevision(revision: number, { enabled = true }: { enabled?: boolean } = {}) {
  return useQuery({
    queryKey: controlKeys.revision(revision),
    queryFn: () => unwrap(api.GET('/api/v0/organization/enterprise-controls/history/{revision}', { params: { path: { revision: String(revision) } } })),
    staleTime: Infinity,
    enabled,
  });
}

/** The plugins of the organization's marketplaces as its agents last reported them. */
export function usePluginCatalog() {
  return useQuery({
    queryKey: controlKeys.plugins,
    queryFn: () => unwrap(api.GET('/api/v0/organization/enterprise-controls/plugins')),
    refetchOnWindowFocus: false,
  });
}

const MCP_OAUTH = '/api/v0/organization/enterprise-controls/mcp-servers/{serverName}/oauth' as const;

/** The OAuth sign-in of a saved HTTP MCP server. */
export function useMcpSignIn(serverName: string) {
  return useQuery({
    queryKey: controlKeys.mcpOAuth(serverName),
    queryFn: () => unwrap(api.GET(MCP_OAUTH, { params: { path: { serverName } } })),
    refetchOnWindowFocus: false,
  });
}

/** Starts a sign-in: the answer is the authorization server's address, to send the browser to. */
export function useStartMcpSignIn(serverName: string, options: { onSuccess: (started: Schemas['StartedMcpOAuth']) => void }) {
  return useMutation({
    mutationFn: () => unwrap(api.POST(MCP_OAUTH, { params: { path: { serverName } }, body: {} })),
    onSuccess: (started) => options.onSuccess(started),
  });
}

/** Forgets the server's tokens; pending until its sign-in is read again. */
export function useForgetMcpSignIn(serverName: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: () => done(api.DELETE(MCP_OAUTH, { params: { path: { serverName } } })),
    onSettled: () => queries.invalidateQueries({ queryKey: controlKeys.mcpOAuth(serverName) }),
  });
}

/** The agent policy (every role but guests may read it): the organization's custom models, among others. */
export function useAgentPolicy({ enabled }: { enabled: boolean }) {
  return useQuery({
    queryKey: controlKeys.agentPolicy,
    enabled,
    staleTime: 60_000,
    queryFn: () => unwrap(api.GET('/api/v0/agent/policy')),
  });
}

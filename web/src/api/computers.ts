import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, done, unwrap, type Schemas } from './client';
import { useEventStream, type StreamState } from './event-stream';

/** The computers' query keys: the list (`GET /api/v0/computers`) and one computer. */
export const computerKeys = {
  all: ['computers'] as const,
  detail: (computerId: string) => ['computer', computerId] as const,
};

/** What the computers pages follow live. */
export const COMPUTER_EVENTS = ['computer.created', 'computer.status_changed', 'computer.placement_changed', 'computer.deleted'] as const;

/** The computers the user may see (owners and managers: all of the organization's; members: their own; guests: none, 403). */
export function useComputers({ enabled = true }: { enabled?: boolean } = {}) {
  return useQuery({ queryKey: computerKeys.all, enabled, queryFn: () => unwrap(api.GET('/api/v0/computers')) });
}

/** Follows the computers' events: the list is read again on each, and when the stream (re)opens. */
export function useComputersLive(): StreamState {
  const queries = useQueryClient();
  return useEventStream(
    COMPUTER_EVENTS,
    () => void queries.invalidateQueries({ queryKey: computerKeys.all }),
    () => void queries.invalidateQueries({ queryKey: computerKeys.all }),
  );
}

export function useComputer(computerId: string) {
  return useQuery({
    queryKey: computerKeys.detail(computerId),
    queryFn: () => unwrap(api.GET('/api/v0/computers/{computerId}', { params: { path: { computerId } } })),
  });
}

/** Follows the computers' events: this computer is read again when one names it, and when the stream (re)opens. */
export function useComputerLive(computerId: string): StreamState {
  const queries = useQueryClient();
  return useEventStream(
    COMPUTER_EVENTS,
    (event) => {
      if ('computerId' in event.data && event.data.computerId === computerId) void queries.invalidateQueries({ queryKey: computerKeys.detail(computerId) });
    },
    () => void queries.invalidateQueries({ queryKey: computerKeys.detail(computerId) }),
  );
}

/** Creates a computer; the answer carries its agent token, shown once. */
export function useCreateComputer(options: { onSuccess: (computer: Schemas['Computer']) => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: (body: Schemas['CreateComputerBody']) => unwrap(api.POST('/api/v0/computers', { body })),
    onSuccess: (computer) => {
      void queries.invalidateQueries({ queryKey: computerKeys.all });
      options.onSuccess(computer);
    },
  });
}

export function useRetryProvisioning(computerId: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.POST('/api/v0/computers/{computerId}/retry', { params: { path: { computerId } } })),
    onSuccess: (updated) => queries.setQueryData(computerKeys.detail(computerId), updated),
  });
}

/** A new agent token (the old one stops working at once), shown once. */
export function useRotateAgentToken(computerId: string, options: { onSuccess: (agentToken: string) => void }) {
  return useMutation({
    mutationFn: () => unwrap(api.POST('/api/v0/computers/{computerId}/agent-token', { params: { path: { computerId } } })),
    onSuccess: (answer) => options.onSuccess(answer.agentToken),
  });
}

export function useDeleteComputer(computerId: string, options: { onSuccess: () => void }) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: () => done(api.DELETE('/api/v0/computers/{computerId}', { params: { path: { computerId } } })),
    onSuccess: () => {
      queries.removeQueries({ queryKey: computerKeys.detail(computerId) });
      void queries.invalidateQueries({ queryKey: computerKeys.all });
      options.onSuccess();
    },
  });
}

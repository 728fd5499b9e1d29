import { useMutation, useQuery } from '@tanstack/react-query';
import { api, unwrap, type Me, type Schemas } from './client';

/** Signing in: who a key is (`GET /api/v0/me`) and, on a server with no organization yet, the first run's setup. */
export const authKeys = {
  setup: ['setup'] as const,
};

/** Who the credential set on the client is; the API's problem when it does not work. */
export function readMe(): Promise<Me> {
  return unwrap(api.GET('/api/v0/me'));
}

/** Whether this server still needs its first organization (`{needed}`). */
export function useSetupStatus() {
  return useQuery({ queryKey: authKeys.setup, queryFn: () => unwrap(api.GET('/api/v0/setup')) });
}

type SetupBody = Schemas['SetupBody'];

/** Makes the first organization and its owner; answers the owner's first key. */
export function useCompleteSetup(options: { onSuccess: (result: Schemas['SetupResultView']) => void }) {
  return useMutation({
    mutationFn: (body: SetupBody) => unwrap(api.POST('/api/v0/setup', { body })),
    onSuccess: (result) => options.onSuccess(result),
  });
}

import type { Me } from '../api/client';
import { useSessionOwner } from '../api/sessions';

/**
 * Whether the signed-in user may change a session (add a message, interrupt, decide an approval), as the server's
 * AccessPolicy decides: owners and managers any session of their organization, members their own, guests none.
 *
 * The spec's Session carries no owner, and its shape is not ours to change. For a member the owner is read from the
 * session's `session.created` event (`data.ownerId`), which anyone who may read the session may list. When the log
 * no longer keeps it (EVENT_RETENTION_DAYS) the answer is `unknown`: the controls are shown and the server decides
 * (its 403 `read_only_role` is shown as it words it).
 */
export type WriteAccess = 'yes' | 'no' | 'unknown' | 'checking';

export function useSessionWriteAccess(sessionId: string, me: Me): WriteAccess {
  const role = me.user.role;
  const owner = useSessionOwner(sessionId, { enabled: role === 'member' });
  if (role === 'guest') return 'no';
  if (role !== 'member') return 'yes';
  if (owner.isPending) return 'checking';
  if (!owner.data) return 'unknown';
  return owner.data === me.user.id ? 'yes' : 'no';
}

import type { ReactNode } from 'react';
import type { Credential } from './CredentialTable';
import { ConfirmDialog } from './ConfirmDialog';
import { ErrorMessage } from './ErrorMessage';

/** What the dialog reads of the page's revoke mutation (React Query's). */
interface RevokeMutation<C> {
  isPending: boolean;
  error: unknown;
  mutate: (credential: C) => void;
}

/**
 * Asks before revoking a key or a token (`children`: what stops working). Open while `credential` is set; `onClose`
 * (cancel) is the page's, which also closes it once the revoke succeeds.
 */
export function RevokeCredentialDialog<C extends Credential>({
  credential,
  revoke,
  confirmLabel,
  onClose,
  children,
}: {
  credential: C | null;
  revoke: RevokeMutation<C>;
  confirmLabel: string;
  onClose: () => void;
  children: ReactNode;
}) {
  return (
    <ConfirmDialog
      open={credential !== null}
      onOpenChange={(open) => (open ? undefined : onClose())}
      title={`Revoke “${credential?.name ?? ''}”?`}
      confirmLabel={confirmLabel}
      pending={revoke.isPending}
      onConfirm={() => credential && revoke.mutate(credential)}
      error={<ErrorMessage error={revoke.error} action="Revoking" />}
    >
      {children}
    </ConfirmDialog>
  );
}

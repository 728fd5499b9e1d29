import type { ReactNode } from 'react';
import { formatTime } from '../format';
import { ActionsHeader, DangerRowAction } from './TableActions';

/** What the API says of a secret it issued (an API key, an enrollment token): known by its prefix, revoked, never deleted. */
export interface Credential {
  id: string;
  name: string;
  prefix: string;
  createdAt: number;
  lastUsedAt: number | null;
  expiresAt: number | null;
  revokedAt: number | null;
}

export type CredentialStatus = 'Active' | 'Revoked' | 'Expired';

export function credentialStatus(credential: Credential): CredentialStatus {
  if (credential.revokedAt !== null) return 'Revoked';
  if (credential.expiresAt !== null && credential.expiresAt <= Date.now()) return 'Expired';
  return 'Active';
}

/**
 * API keys and enrollment tokens, one a row: name, prefix, dates, status and a Revoke button while it works. The two
 * pages differ only in their words, so they share the table.
 */
export function CredentialTable<C extends Credential>({
  credentials,
  className,
  caption,
  prefixLabel,
  user,
  badge,
  onRevoke,
}: {
  credentials: C[];
  className: string;
  caption: ReactNode;
  /** The prefix column's header ("Key", "Token"). */
  prefixLabel: string;
  /** Whose it is: given, the table has a User column. */
  user?: (credential: C) => ReactNode;
  /** After the name, e.g. "this session". */
  badge?: (credential: C) => ReactNode;
  onRevoke: (credential: C) => void;
}) {
  return (
    <table className={className}>
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">{prefixLabel}</th>
          {user ? <th scope="col">User</th> : null}
          <th scope="col">Created</th>
          <th scope="col">Last used</th>
          <th scope="col">Expires</th>
          <th scope="col">Status</th>
          <ActionsHeader />
        </tr>
      </thead>
      <tbody>
        {credentials.map((credential) => {
          const status = credentialStatus(credential);
          return (
            <tr key={credential.id}>
              <th scope="row" data-label="Name">
                {credential.name}
                {badge?.(credential)}
              </th>
              <td data-label={prefixLabel}>
                <code>{credential.prefix}…</code>
              </td>
              {user ? <td data-label="User">{user(credential)}</td> : null}
              <td data-label="Created">{formatTime(credential.createdAt)}</td>
              <td data-label="Last used">{formatTime(credential.lastUsedAt, 'Not yet')}</td>
              <td data-label="Expires">{formatTime(credential.expiresAt)}</td>
              <td data-label="Status">
                <span className={`status-pill status-${status.toLowerCase()}`}>{status}</span>
              </td>
              <DangerRowAction action="Revoke" name={credential.name} available={status === 'Active'} onClick={() => onRevoke(credential)} />
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

import type { Role } from '../domain/role';
import type { UserKind } from '../domain/user-kind';

/** An API key was created (its secret is never in an event). */
export interface ApiKeyCreatedData {
  apiKeyId: string;
  /** Whose key it is. */
  userId: string;
  name: string;
  prefix: string;
  expiresAt: number | null;
}

/** An API key was revoked: by its user, an owner or manager, the operator, or with its user's removal. */
export interface ApiKeyRevokedData {
  apiKeyId: string;
  userId: string;
  name: string;
  prefix: string;
}

/** A user or service account was added to the organization, changed (role, name) or removed. */
export interface MemberChangedData {
  userId: string;
  email: string;
  name: string;
  role: Role;
  kind: UserKind;
  change: 'added' | 'updated' | 'removed';
}

declare module '../../../platform/events/event' {
  interface EventDataMap {
    'api_key.created': ApiKeyCreatedData;
    'api_key.revoked': ApiKeyRevokedData;
    'member.changed': MemberChangedData;
  }
}

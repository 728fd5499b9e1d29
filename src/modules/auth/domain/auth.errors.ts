import { codesOf, CodeOf, errorClassOf, ErrorKind, ErrorTable } from '../../../platform/http/domain-error';
import type { Role } from './role';

const AUTH_ERRORS = {
  MissingCredentials: { code: 'missing_credentials', kind: ErrorKind.Unauthenticated },
  MalformedCredentials: { code: 'malformed_credentials', kind: ErrorKind.Unauthenticated },
  InvalidCredentials: { code: 'invalid_credentials', kind: ErrorKind.Unauthenticated },
  RevokedApiKey: { code: 'revoked_api_key', kind: ErrorKind.Unauthenticated },
  ExpiredCredentials: { code: 'expired_credentials', kind: ErrorKind.Unauthenticated },
  JwtNotConfigured: { code: 'jwt_not_configured', kind: ErrorKind.Unauthenticated },
  InsufficientRole: { code: 'insufficient_role', kind: ErrorKind.Forbidden },
  ApiKeyCreationRestricted: { code: 'api_key_creation_restricted', kind: ErrorKind.Forbidden },
  ApiKeyNotFound: { code: 'api_key_not_found', kind: ErrorKind.NotFound },
  OrganizationNotFound: { code: 'organization_not_found', kind: ErrorKind.NotFound },
  UserNotFound: { code: 'user_not_found', kind: ErrorKind.NotFound },
  OrganizationExists: { code: 'organization_exists', kind: ErrorKind.Conflict },
  UserExists: { code: 'user_exists', kind: ErrorKind.Conflict },
  ComputerTokenNotAccepted: { code: 'computer_token_not_accepted', kind: ErrorKind.Forbidden },
  AgentTokenRequired: { code: 'agent_token_required', kind: ErrorKind.Forbidden },
  WorkerTokenNotAccepted: { code: 'worker_token_not_accepted', kind: ErrorKind.Forbidden },
  RoleAboveYours: { code: 'role_above_yours', kind: ErrorKind.Forbidden },
  LastOwner: { code: 'last_owner', kind: ErrorKind.Conflict },
  ServiceAccountNotFound: { code: 'service_account_not_found', kind: ErrorKind.NotFound },
  SetupInvalidToken: { code: 'setup_invalid_token', kind: ErrorKind.Unauthenticated },
  SetupDone: { code: 'setup_done', kind: ErrorKind.Conflict },
} as const satisfies ErrorTable;

export const AuthErrorCode = codesOf(AUTH_ERRORS);
export type AuthErrorCode = CodeOf<typeof AUTH_ERRORS>;

export class AuthError extends errorClassOf(AUTH_ERRORS) {}

/** A caller whose role is not among the route's. */
export function insufficientRole(allowed: readonly Role[], role: Role): AuthError {
  return new AuthError(AuthErrorCode.InsufficientRole, `This operation requires the ${allowed.join(' or ')} role; you are a ${role}.`, {
    requiredRoles: allowed,
    role,
  });
}

/** A user's API key or JWT on a route only a computer's agent token may call. */
export function agentTokenRequired(): AuthError {
  return new AuthError(
    AuthErrorCode.AgentTokenRequired,
    "Only a computer's agent token may call this (the agent working on that computer); user API keys and JWTs may not.",
  );
}

/** A member or guest creating a key while the organization keeps that to managers and owners. */
export function apiKeyCreationRestricted(): AuthError {
  return new AuthError(
    AuthErrorCode.ApiKeyCreationRestricted,
    'Your organization restricts API key creation to managers and owners (restrictApiKeyCreationToManagers).',
  );
}

/** A member or guest asking for every key of the organization. */
export function listingEveryKeyRefused(): AuthError {
  return new AuthError(AuthErrorCode.InsufficientRole, 'Listing every key of the organization requires the owner or manager role.');
}

/** Demoting or removing the organization's only owner. */
export function lastOwner(): AuthError {
  return new AuthError(AuthErrorCode.LastOwner, "This is the organization's last owner: make someone else an owner first.");
}

/** The setup token once an organization exists. */
export function setupDone(): AuthError {
  return new AuthError(AuthErrorCode.SetupDone, 'This server is set up already: an organization exists. Ask its owner for a key, or use the CLI.');
}

/** An API key the caller may not revoke, whatever the reason (unknown, another organization's, another user's). */
export function apiKeyNotFound(id: string): AuthError {
  return new AuthError(AuthErrorCode.ApiKeyNotFound, `No API key ${id} exists in your organization.`);
}

export function userNotFound(userId: string): AuthError {
  return new AuthError(AuthErrorCode.UserNotFound, `No user ${userId} exists in your organization.`, { userId });
}

/** A person's id names no service account either: people create their own keys. */
export function serviceAccountNotFound(userId: string): AuthError {
  return new AuthError(AuthErrorCode.ServiceAccountNotFound, `No service account ${userId} exists in your organization; people create their own keys.`, {
    userId,
  });
}

import { DomainError, ErrorKind } from '../../../platform/http/domain-error';

export enum AuthErrorCode {
  MissingCredentials = 'missing_credentials',
  MalformedCredentials = 'malformed_credentials',
  InvalidCredentials = 'invalid_credentials',
  RevokedApiKey = 'revoked_api_key',
  ExpiredCredentials = 'expired_credentials',
  JwtNotConfigured = 'jwt_not_configured',
  InsufficientRole = 'insufficient_role',
  ApiKeyCreationRestricted = 'api_key_creation_restricted',
  ApiKeyNotFound = 'api_key_not_found',
  OrganizationNotFound = 'organization_not_found',
  UserNotFound = 'user_not_found',
  OrganizationExists = 'organization_exists',
  UserExists = 'user_exists',
  ComputerTokenNotAccepted = 'computer_token_not_accepted',
  AgentTokenRequired = 'agent_token_required',
  RoleAboveYours = 'role_above_yours',
  LastOwner = 'last_owner',
  ServiceAccountNotFound = 'service_account_not_found',
  SetupInvalidToken = 'setup_invalid_token',
  SetupDone = 'setup_done',
}

export class AuthError extends DomainError<AuthErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case AuthErrorCode.MissingCredentials:
      case AuthErrorCode.MalformedCredentials:
      case AuthErrorCode.InvalidCredentials:
      case AuthErrorCode.RevokedApiKey:
      case AuthErrorCode.ExpiredCredentials:
      case AuthErrorCode.JwtNotConfigured:
        return ErrorKind.Unauthenticated;
      case AuthErrorCode.InsufficientRole:
      case AuthErrorCode.ApiKeyCreationRestricted:
      case AuthErrorCode.ComputerTokenNotAccepted:
      case AuthErrorCode.AgentTokenRequired:
      case AuthErrorCode.RoleAboveYours:
        return ErrorKind.Forbidden;
      case AuthErrorCode.ApiKeyNotFound:
      case AuthErrorCode.OrganizationNotFound:
      case AuthErrorCode.UserNotFound:
      case AuthErrorCode.ServiceAccountNotFound:
        return ErrorKind.NotFound;
      case AuthErrorCode.LastOwner:
      case AuthErrorCode.SetupDone:
        return ErrorKind.Conflict;
      case AuthErrorCode.SetupInvalidToken:
        return ErrorKind.Unauthenticated;
      case AuthErrorCode.OrganizationExists:
      case AuthErrorCode.UserExists:
        return ErrorKind.Conflict;
    }
  }
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

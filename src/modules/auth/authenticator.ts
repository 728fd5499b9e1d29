import { Injectable } from '@nestjs/common';
import { isUuid } from '../../platform/database/ids';
import { AuthRepository, CallerRow } from './auth.repository';
import { CredentialCache } from './credential-cache';
import { ComputerTokenLookup } from './contracts/computer-token-lookup';
import {
  hashApiKey,
  isWellFormedApiKey,
  isWellFormedComputerToken,
  looksLikeApiKey,
  looksLikeComputerToken,
  looksLikeWorkerToken,
} from './domain/api-key-secret';
import { AuthError, AuthErrorCode } from './domain/auth.errors';
import { Principal } from './domain/principal';
import { JwtVerifier } from './jwt-verifier';

/** Turns an `Authorization` header into a Principal, or a 401 that says what was wrong. */
@Injectable()
export class Authenticator {
  constructor(
    private readonly repository: AuthRepository,
    private readonly jwt: JwtVerifier,
    private readonly cache: CredentialCache,
    private readonly computerTokens: ComputerTokenLookup,
  ) {}

  async authenticate(header: string | undefined, now = new Date()): Promise<Principal> {
    const token = bearerToken(header);
    if (looksLikeApiKey(token)) return this.fromApiKey(token, now);
    if (looksLikeComputerToken(token)) return this.fromComputerToken(token);
    if (JwtVerifier.looksLikeJwt(token)) return this.fromJwt(token);
    if (looksLikeWorkerToken(token)) {
      throw new AuthError(
        AuthErrorCode.WorkerTokenNotAccepted,
        "A worker's token works only on the worker channel (/api/v0/worker); use an API key or JWT here.",
      );
    }
    throw new AuthError(AuthErrorCode.MalformedCredentials, 'The bearer token is neither an API key nor a well-formed JWT.');
  }

  /**
   * The principal when it takes no I/O to know, else undefined: an API key this instance has cached, with its use
   * recorded within the minute (nearly every request of a busy client), answered without a promise. A header that
   * can be refused from what is known throws its 401, as `authenticate` would.
   */
  known(header: string | undefined, now = new Date()): Principal | undefined {
    const token = bearerToken(header);
    if (!looksLikeApiKey(token) || !isWellFormedApiKey(token)) return undefined;
    const caller = this.cache.peek(hashApiKey(token));
    if (!caller || AuthRepository.touchDue(caller.last_used_at, now)) return undefined;
    refuseInvalidApiKey(caller, now);
    return toPrincipal(caller, { kind: 'api_key', apiKeyId: caller.api_key_id! });
  }

  private async fromApiKey(token: string, now: Date): Promise<Principal> {
    const hash = isWellFormedApiKey(token) ? hashApiKey(token) : null;
    const caller = hash ? await this.cache.get(hash, () => this.repository.findApiKeyByHash(hash)) : null;
    refuseInvalidApiKey(caller, now);
    const apiKeyId = caller.api_key_id!;
    if (await this.repository.touchApiKey({ organizationId: caller.organization_id, id: apiKeyId, lastUsedAt: caller.last_used_at }, now))
      caller.last_used_at = now;
    return toPrincipal(caller, { kind: 'api_key', apiKeyId });
  }

  /**
   * A computer's agent token acts for the computer's owner; rotating the token invalidates the old one. Computers
   * names the token's computer and owner; the owner as a caller is this module's read, cached per user.
   */
  private async fromComputerToken(token: string): Promise<Principal> {
    const hash = isWellFormedComputerToken(token) ? hashApiKey(token) : null;
    const computer = hash ? await this.cache.computer(hash, () => this.computerTokens.byHash(hash)) : null;
    const caller = computer ? await this.userCaller(computer.ownerId, computer.organizationId) : null;
    if (!computer || !caller) throw new AuthError(AuthErrorCode.InvalidCredentials, 'The computer token is not valid (rotated, or its computer was deleted).');
    return toPrincipal(caller, { kind: 'computer', computerId: computer.computerId });
  }

  /** Drops a rotated token from this instance's cache, so it answers 401 here at once. */
  forgetComputerToken(tokenHash: string): void {
    this.cache.forgetComputer(tokenHash);
  }

  /** The role comes from the database, not the token: a demotion applies within AUTH_CACHE_MS. */
  private async fromJwt(token: string): Promise<Principal> {
    const claims = await this.jwt.verify(token);
    const { userId, organizationId } = claims;
    const caller = isUuid(userId) && isUuid(organizationId) ? await this.userCaller(userId, organizationId) : null;
    if (!caller) throw new AuthError(AuthErrorCode.InvalidCredentials, 'The JWT names a user this server does not know.');
    return toPrincipal(caller, { kind: 'jwt' });
  }

  /** A user of the organization (not removed) as a caller, with the organization's features. */
  private userCaller(userId: string, organizationId: string): Promise<CallerRow | null> {
    return this.cache.get(CredentialCache.userKey(userId, organizationId), () => this.repository.findCaller(userId, organizationId));
  }
}

function bearerToken(header: string | undefined): string {
  if (!header) {
    throw new AuthError(AuthErrorCode.MissingCredentials, 'Send an API key or JWT as: Authorization: Bearer <token>.');
  }
  const token = parseBearer(header);
  if (token === null) {
    throw new AuthError(AuthErrorCode.MalformedCredentials, 'The Authorization header must read: Bearer <token>.');
  }
  return token;
}

/** The token of an `Authorization: Bearer <token>` header; null when the header is missing or reads otherwise. */
export function parseBearer(header: string | undefined): string | null {
  const match = header ? /^Bearer +(\S+) *$/i.exec(header) : null;
  return match ? match[1] : null;
}

/** Throws the 401 that says why an API key's caller row (null: none) is refused. */
function refuseInvalidApiKey(caller: CallerRow | null, now: Date): asserts caller is CallerRow {
  if (!caller) throw new AuthError(AuthErrorCode.InvalidCredentials, 'The API key is not valid.');
  if (caller.revoked_at) throw new AuthError(AuthErrorCode.RevokedApiKey, 'The API key has been revoked.');
  if (caller.user_removed_at) throw new AuthError(AuthErrorCode.InvalidCredentials, "The API key's user was removed from the organization.");
  if (caller.expires_at && caller.expires_at <= now) throw new AuthError(AuthErrorCode.ExpiredCredentials, 'The API key has expired.');
}

function toPrincipal(caller: CallerRow, credential: Principal['credential']): Principal {
  return {
    userId: caller.user_id,
    organizationId: caller.organization_id,
    role: caller.role,
    email: caller.email,
    name: caller.name,
    credential,
    features: caller.features ?? {},
  };
}

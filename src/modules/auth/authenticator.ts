import { Injectable } from '@nestjs/common';
import { isUuid } from '../../platform/database/ids';
import { AuthRepository } from './auth.repository';
import { hashApiKey, isWellFormedApiKey, looksLikeApiKey } from './domain/api-key-secret';
import { AuthError, AuthErrorCode } from './domain/auth.errors';
import { Principal } from './domain/principal';
import { JwtVerifier } from './jwt-verifier';

/** Turns an `Authorization` header into a Principal, or a 401 that says what was wrong. */
@Injectable()
export class Authenticator {
  constructor(
    private readonly repository: AuthRepository,
    private readonly jwt: JwtVerifier,
  ) {}

  async authenticate(header: string | undefined, now = new Date()): Promise<Principal> {
    if (!header) {
      throw new AuthError(AuthErrorCode.MissingCredentials, 'Send an API key or JWT as: Authorization: Bearer <token>.');
    }
    const match = /^Bearer +(\S+) *$/i.exec(header);
    if (!match) {
      throw new AuthError(AuthErrorCode.MalformedCredentials, 'The Authorization header must read: Bearer <token>.');
    }
    const token = match[1];
    if (looksLikeApiKey(token)) return this.fromApiKey(token, now);
    if (JwtVerifier.looksLikeJwt(token)) return this.fromJwt(token);
    throw new AuthError(AuthErrorCode.MalformedCredentials, 'The bearer token is neither an API key nor a well-formed JWT.');
  }

  private async fromApiKey(token: string, now: Date): Promise<Principal> {
    const key = isWellFormedApiKey(token) ? await this.repository.findApiKeyByHash(hashApiKey(token)) : null;
    if (!key) throw new AuthError(AuthErrorCode.InvalidCredentials, 'The API key is not valid.');
    if (key.revokedAt) throw new AuthError(AuthErrorCode.RevokedApiKey, 'The API key has been revoked.');
    if (key.expiresAt && key.expiresAt <= now) throw new AuthError(AuthErrorCode.ExpiredCredentials, 'The API key has expired.');
    await this.repository.touchApiKey(key, now);
    const { user } = key;
    return {
      userId: user.id,
      organizationId: user.organizationId,
      role: user.role,
      email: user.email,
      name: user.name,
      credential: { kind: 'api_key', apiKeyId: key.id },
    };
  }

  /** The user's current role comes from the database, so a demotion takes effect at once. */
  private async fromJwt(token: string): Promise<Principal> {
    const claims = await this.jwt.verify(token);
    const user = isUuid(claims.userId) && isUuid(claims.organizationId) ? await this.repository.findUser(claims.userId, claims.organizationId) : null;
    if (!user) throw new AuthError(AuthErrorCode.InvalidCredentials, 'The JWT names a user this server does not know.');
    return {
      userId: user.id,
      organizationId: user.organizationId,
      role: user.role,
      email: user.email,
      name: user.name,
      credential: { kind: 'jwt' },
    };
  }
}

import { Injectable } from '@nestjs/common';
import { createRemoteJWKSet, decodeProtectedHeader, errors, JWTPayload, jwtVerify, JWTVerifyGetKey } from 'jose';
import { AppConfig } from '../../config/app-config';
import { AuthError, AuthErrorCode } from './domain/auth.errors';

/** Claims a JWT must carry: `sub` is the user id, `org_id` the organization id. */
export interface PlatformClaims {
  userId: string;
  organizationId: string;
}

export const ORGANIZATION_CLAIM = 'org_id';
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
/** How far ahead of this server's clock an identity provider's clock may run (`iat` in the future). */
export const JWT_CLOCK_SKEW_SECONDS = 60;

/**
 * Verifies JWTs issued by the operator's identity provider: HS256 with JWT_SECRET, or any
 * asymmetric algorithm against the keys at JWT_JWKS_URL. `exp` and `iat` are required, and neither
 * the token's age nor its lifetime may exceed JWT_MAX_AGE_SECONDS; `iss` and `aud` are checked when
 * configured. The platform itself issues no JWTs.
 */
@Injectable()
export class JwtVerifier {
  private readonly secret?: Uint8Array;
  private readonly jwks?: JWTVerifyGetKey;

  constructor(private readonly config: AppConfig) {
    if (config.JWT_SECRET) this.secret = new TextEncoder().encode(config.JWT_SECRET);
    if (config.JWT_JWKS_URL) this.jwks = createRemoteJWKSet(new URL(config.JWT_JWKS_URL), { cooldownDuration: 30_000 });
  }

  static looksLikeJwt(token: string): boolean {
    return JWT_SHAPE.test(token);
  }

  async verify(token: string): Promise<PlatformClaims> {
    let algorithm: string | undefined;
    try {
      algorithm = decodeProtectedHeader(token).alg;
    } catch {
      throw new AuthError(AuthErrorCode.MalformedCredentials, 'The bearer token is neither an API key nor a well-formed JWT.');
    }
    const options = { issuer: this.config.JWT_ISSUER, audience: this.config.JWT_AUDIENCE, requiredClaims: ['exp', 'iat', 'sub', ORGANIZATION_CLAIM] };
    let payload: JWTPayload;
    try {
      if (algorithm === 'HS256' && this.secret) {
        payload = (await jwtVerify(token, this.secret, { ...options, algorithms: ['HS256'] })).payload;
      } else if (algorithm && algorithm !== 'none' && !algorithm.startsWith('HS') && this.jwks) {
        payload = (await jwtVerify(token, this.jwks, options)).payload;
      } else {
        throw new AuthError(AuthErrorCode.JwtNotConfigured, `JWTs signed with ${algorithm ?? 'no algorithm'} are not accepted by this server.`);
      }
    } catch (error) {
      if (error instanceof AuthError) throw error;
      if (error instanceof errors.JWTExpired) throw new AuthError(AuthErrorCode.ExpiredCredentials, 'The JWT has expired.');
      if (error instanceof errors.JWTClaimValidationFailed) {
        throw new AuthError(AuthErrorCode.InvalidCredentials, `The JWT was rejected: ${error.message}.`);
      }
      throw new AuthError(AuthErrorCode.InvalidCredentials, 'The JWT signature could not be verified.');
    }
    this.checkAge(payload.iat!, payload.exp!);
    const organizationId = payload[ORGANIZATION_CLAIM];
    if (typeof payload.sub !== 'string' || typeof organizationId !== 'string') {
      throw new AuthError(AuthErrorCode.InvalidCredentials, `The JWT must carry string claims sub and ${ORGANIZATION_CLAIM}.`);
    }
    return { userId: payload.sub, organizationId };
  }

  /**
   * jose checked that both are numbers and that `exp` is ahead, so a token older than JWT_MAX_AGE_SECONDS
   * also has too long a lifetime: it is told it is too old, the clearer reason. jose's own `maxTokenAge`
   * would not catch a fresh token with a long lifetime.
   */
  private checkAge(iat: number, exp: number): void {
    const now = Date.now() / 1000;
    const max = this.config.JWT_MAX_AGE_SECONDS;
    if (iat > now + JWT_CLOCK_SKEW_SECONDS) {
      throw new AuthError(
        AuthErrorCode.InvalidCredentials,
        `The JWT's iat is in the future (more than ${JWT_CLOCK_SKEW_SECONDS} s ahead of the server's clock).`,
      );
    }
    if (now - iat > max) throw new AuthError(AuthErrorCode.ExpiredCredentials, `The JWT was issued more than ${max} s ago; get a new one.`);
    if (exp - iat > max) {
      throw new AuthError(AuthErrorCode.InvalidCredentials, `The JWT's lifetime (exp - iat) exceeds the ${max} s this server accepts.`);
    }
  }
}

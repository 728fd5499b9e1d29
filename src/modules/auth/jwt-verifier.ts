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

/**
 * Verifies JWTs issued by the operator's identity provider: HS256 with JWT_SECRET, or any
 * asymmetric algorithm against the keys at JWT_JWKS_URL. `exp` is required; `iss` and `aud`
 * are checked when configured. The platform itself issues no JWTs.
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
    const options = { issuer: this.config.JWT_ISSUER, audience: this.config.JWT_AUDIENCE, requiredClaims: ['exp', 'sub', ORGANIZATION_CLAIM] };
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
    const organizationId = payload[ORGANIZATION_CLAIM];
    if (typeof payload.sub !== 'string' || typeof organizationId !== 'string') {
      throw new AuthError(AuthErrorCode.InvalidCredentials, `The JWT must carry string claims sub and ${ORGANIZATION_CLAIM}.`);
    }
    return { userId: payload.sub, organizationId };
  }
}

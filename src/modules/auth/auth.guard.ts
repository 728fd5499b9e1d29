import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { ACCEPTS_COMPUTER_TOKENS, ALLOWED_ROLES, PUBLIC_ROUTE } from './auth.decorators';
import { Authenticator } from './authenticator';
import { agentTokenRequired, AuthError, AuthErrorCode, insufficientRole } from './domain/auth.errors';
import { Role, ROLES } from './domain/role';

/**
 * Global: every route needs a valid credential unless marked @Public; @Authenticated narrows roles.
 * The credential was checked before the body was read (RequestAuthentication, in onRequest); the
 * guard reuses that principal, and authenticates itself only where no edge hook ran.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: Authenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const principal = request.principal ?? (await this.authenticator.authenticate(request.headers.authorization));
    request.principal = principal;
    const computerTokens = this.reflector.getAllAndOverride<boolean | 'only'>(ACCEPTS_COMPUTER_TOKENS, targets);
    if (computerTokens === 'only' && principal.credential.kind !== 'computer') {
      throw agentTokenRequired();
    }
    if (principal.credential.kind === 'computer' && !computerTokens) {
      throw new AuthError(
        AuthErrorCode.ComputerTokenNotAccepted,
        "A computer's agent token works only on the agent channel (/api/v0/agent); use an API key or JWT here.",
      );
    }
    const allowed = this.reflector.getAllAndOverride<readonly Role[]>(ALLOWED_ROLES, targets) ?? ROLES;
    if (!allowed.includes(principal.role)) {
      throw insufficientRole(allowed, principal.role);
    }
    return true;
  }
}

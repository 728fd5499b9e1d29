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
  /** By controller, then handler: a handler a subclass inherits may carry other class decorators. */
  private readonly rules = new WeakMap<RouteHandler, WeakMap<RouteHandler, RouteRule>>();

  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: Authenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const { isPublic, computerTokens, allowed } = this.ruleOf(context.getHandler(), context.getClass());
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const principal = request.principal ?? (await this.authenticator.authenticate(request.headers.authorization));
    request.principal = principal;
    if (computerTokens === 'only' && principal.credential.kind !== 'computer') {
      throw agentTokenRequired();
    }
    if (principal.credential.kind === 'computer' && !computerTokens) {
      throw new AuthError(
        AuthErrorCode.ComputerTokenNotAccepted,
        "A computer's agent token works only on the agent channel (/api/v0/agent); use an API key or JWT here.",
      );
    }
    if (!allowed.includes(principal.role)) {
      throw insufficientRole(allowed, principal.role);
    }
    return true;
  }

  /** A route's decorators, read once: they never change after start-up, and this runs on every request. */
  private ruleOf(handler: RouteHandler, controller: RouteHandler): RouteRule {
    let ofController = this.rules.get(controller);
    if (!ofController) this.rules.set(controller, (ofController = new WeakMap()));
    let rule = ofController.get(handler);
    if (!rule) {
      const targets = [handler, controller];
      rule = {
        isPublic: this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets) === true,
        computerTokens: this.reflector.getAllAndOverride<boolean | 'only'>(ACCEPTS_COMPUTER_TOKENS, targets),
        allowed: this.reflector.getAllAndOverride<readonly Role[]>(ALLOWED_ROLES, targets) ?? ROLES,
      };
      ofController.set(handler, rule);
    }
    return rule;
  }
}

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- what Nest's ExecutionContext hands out
type RouteHandler = Function;

interface RouteRule {
  isPublic: boolean;
  computerTokens: boolean | 'only' | undefined;
  allowed: readonly Role[];
}

import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiExtension, ApiForbiddenResponse, ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiErrorExamples, ApiSharedErrorExamples, PROBE_EXTENSION, V0_ERROR } from '../../platform/http/openapi';
import { EdgeConfig } from '../../platform/http/route-config';
import type { SessionWorker } from './contracts/worker-session-lookup';
import { agentTokenRequired, insufficientRole } from './domain/auth.errors';
import { Principal } from './domain/principal';
import { Role, ROLES } from './domain/role';

export const PUBLIC_ROUTE = 'auth:public';
export const ALLOWED_ROLES = 'auth:roles';
export const BEARER_SCHEME = 'bearer';
/** The OpenAPI security scheme of the worker channel: a worker's own tokens, which no other route takes. */
export const WORKER_SCHEME = 'workerToken';
export const ACCEPTS_COMPUTER_TOKENS = 'auth:computerTokens';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    /** The worker whose live session sent a request on the worker channel, as the request edge found it. */
    sessionWorker?: SessionWorker;
  }
}

/**
 * The route needs no credentials (health, docs). Everything else is denied by default.
 * `probe`: a load balancer's health check, exempt from the anonymous rate limit (so its operation lists no 429).
 * Its OpenAPI operation says so, with a requirement of nothing (`{}`; Nest drops an empty list): the document writes
 * that `security: []` (openapi-document.ts), where a missing `security` would leave readers to guess.
 */
export const Public = (options: { probe?: boolean } = {}) =>
  applyDecorators(
    SetMetadata(PUBLIC_ROUTE, true),
    EdgeConfig({ public: true, probe: options.probe === true }),
    ApiSecurity({}),
    ...(options.probe ? [ApiExtension(PROBE_EXTENSION, true)] : []),
  );

/**
 * The worker channel: the route checks a worker's own token itself (its enrollment or session token), which the
 * Authenticator refuses everywhere else; API keys, JWTs and agent tokens are not credentials here. The request edge
 * counts a live session's requests against its worker's rate limit, anything else against the address's anonymous one.
 * Its OpenAPI operation names the worker token scheme.
 */
export const WorkerCredentials = () =>
  applyDecorators(SetMetadata(PUBLIC_ROUTE, true), EdgeConfig({ public: true, workerChannel: true }), ApiBearerAuth(WORKER_SCHEME));

/**
 * Who may call a route: any authenticated user by default, or only the roles named
 * (others answer 403). Also writes the route's OpenAPI security and auth error responses.
 */
export function Authenticated(...roles: Role[]) {
  const allowed = roles.length > 0 ? roles : ROLES;
  const decorators = [
    SetMetadata(ALLOWED_ROLES, allowed),
    ApiBearerAuth(BEARER_SCHEME),
    ApiUnauthorizedResponse({ description: 'Credentials missing, malformed, unknown, revoked or expired.', schema: V0_ERROR }),
  ];
  if (roles.length > 0) {
    decorators.push(
      ApiForbiddenResponse({ description: `Only ${roles.join(' and ')} may call this.`, schema: V0_ERROR }),
      // The example names the first role left out, as the guard would answer it.
      ApiSharedErrorExamples(insufficientRole(roles, ROLES.find((role) => !roles.includes(role)) ?? Role.Guest)),
    );
  }
  return applyDecorators(...decorators);
}

/** The route also accepts computers' agent tokens (every other route answers them 403). */
export const AcceptsComputerTokens = () => SetMetadata(ACCEPTS_COMPUTER_TOKENS, true);

/**
 * Only a computer's agent token may call the route: user API keys and JWTs answer 403. For what only
 * an agent does on a computer's behalf (relaying to the organization's models).
 */
export const AgentTokensOnly = () =>
  applyDecorators(
    SetMetadata(ACCEPTS_COMPUTER_TOKENS, 'only'),
    ApiForbiddenResponse({ description: "The credential is a user's API key or JWT: only a computer's agent token may call this.", schema: V0_ERROR }),
    ApiErrorExamples(agentTokenRequired()),
  );

/** The authenticated caller of the current request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, context: ExecutionContext): Principal => {
  const principal = context.switchToHttp().getRequest<FastifyRequest>().principal;
  if (!principal) throw new Error('CurrentPrincipal used on a route without authentication');
  return principal;
});

import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { edgeConfigOf } from '../../platform/http/route-config';
import { Authenticator, parseBearer } from './authenticator';
import { WorkerSessionLookup } from './contracts/worker-session-lookup';
import { CredentialCache } from './credential-cache';
import { hashApiKey, isWellFormedWorkerSessionToken } from './domain/api-key-secret';
import { AuthError } from './domain/auth.errors';
import { credentialIdOf, Principal } from './domain/principal';

/** Who sent a request, as far as the request edge can tell before reading its body. */
export type RequestIdentity =
  | { kind: 'principal'; principal: Principal; credentialId: string }
  /** The worker channel, with a live worker session's token: the route checks the session again itself. */
  | { kind: 'worker'; workerId: string; organizationId: string }
  /** A public route, or one no route matches (answered 404 without asking for credentials). */
  | { kind: 'public'; probe: boolean }
  /** A route that needs a credential, without a valid one: `refusal` is its 401. */
  | { kind: 'refused'; refusal: AuthError };

const ANONYMOUS: RequestIdentity = { kind: 'public', probe: false };

/**
 * Authentication in Fastify's onRequest hook, before a byte of the body is read: a request
 * without a valid credential costs no memory however large the body it announces. Sets
 * `request.principal`, which the AuthGuard then checks for roles and computer tokens.
 */
@Injectable()
export class RequestAuthentication {
  constructor(
    private readonly authenticator: Authenticator,
    private readonly workerSessions: WorkerSessionLookup,
    private readonly cache: CredentialCache,
  ) {}

  /** Without a promise when the credential is known without I/O (Authenticator.known): nearly every request. */
  identify(request: FastifyRequest): RequestIdentity | Promise<RequestIdentity> {
    const edge = edgeConfigOf(request);
    if (request.is404) return { kind: 'public', probe: false };
    if (edge.workerChannel) return this.worker(request);
    if (edge.public) return { kind: 'public', probe: edge.probe === true };
    try {
      const known = this.authenticator.known(request.headers.authorization);
      if (known) return identified(request, known);
    } catch (error) {
      return refused(error);
    }
    return this.authenticator.authenticate(request.headers.authorization).then((principal) => identified(request, principal), refused);
  }

  /**
   * A worker channel request sent with a live session's token is its worker's; anything else (an enrollment token, an
   * unknown or ended session, another kind of credential) is anonymous, so guessing tokens spends the address's budget.
   */
  private worker(request: FastifyRequest): RequestIdentity | Promise<RequestIdentity> {
    const token = parseBearer(request.headers.authorization);
    if (token === null || !isWellFormedWorkerSessionToken(token)) return ANONYMOUS;
    const hash = hashApiKey(token);
    return this.cache
      .worker(hash, () => this.workerSessions.bySessionHash(hash))
      .then((worker) => {
        if (!worker) return ANONYMOUS;
        request.sessionWorker = worker;
        return { kind: 'worker', workerId: worker.workerId, organizationId: worker.organizationId };
      });
  }
}

function identified(request: FastifyRequest, principal: Principal): RequestIdentity {
  request.principal = principal;
  return { kind: 'principal', principal, credentialId: credentialIdOf(principal) };
}

function refused(error: unknown): RequestIdentity {
  if (error instanceof AuthError) return { kind: 'refused', refusal: error };
  throw error;
}

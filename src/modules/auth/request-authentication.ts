import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { edgeConfigOf } from '../../platform/http/route-config';
import { Authenticator } from './authenticator';
import { AuthError } from './domain/auth.errors';
import { credentialIdOf, Principal } from './domain/principal';

/** Who sent a request, as far as the request edge can tell before reading its body. */
export type RequestIdentity =
  | { kind: 'principal'; principal: Principal; credentialId: string }
  /** A public route, or one no route matches (answered 404 without asking for credentials). */
  | { kind: 'public'; probe: boolean }
  /** A route that needs a credential, without a valid one: `refusal` is its 401. */
  | { kind: 'refused'; refusal: AuthError };

/**
 * Authentication in Fastify's onRequest hook, before a byte of the body is read: a request
 * without a valid credential costs no memory however large the body it announces. Sets
 * `request.principal`, which the AuthGuard then checks for roles and computer tokens.
 */
@Injectable()
export class RequestAuthentication {
  constructor(private readonly authenticator: Authenticator) {}

  /** Without a promise when the credential is known without I/O (Authenticator.known): nearly every request. */
  identify(request: FastifyRequest): RequestIdentity | Promise<RequestIdentity> {
    const edge = edgeConfigOf(request);
    if (edge.public || request.is404) return { kind: 'public', probe: edge.probe === true };
    try {
      const known = this.authenticator.known(request.headers.authorization);
      if (known) return identified(request, known);
    } catch (error) {
      return refused(error);
    }
    return this.authenticator.authenticate(request.headers.authorization).then((principal) => identified(request, principal), refused);
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

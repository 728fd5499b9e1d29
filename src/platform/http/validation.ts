import { CanActivate, ExecutionContext } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import type { FastifyRequest } from 'fastify';
import { RequestError, RequestErrorCode } from './domain-error';

export interface FieldError {
  field: string;
  message: string;
}

export function validationError(errors: FieldError[]): RequestError {
  const first = errors[0];
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''})` : '';
  return new RequestError(RequestErrorCode.ValidationFailed, first ? `${first.field}: ${first.message}${more}` : 'The request is invalid.', { errors });
}

/** A key as it may be quoted back: printable, and short. */
const quoted = (key: string) => {
  const clean = key.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 64 ? `${clean.slice(0, 64)}...` : clean;
};

/**
 * The query string against the parameters the route declares: an unknown key (`constructor` and
 * `__proto__` included) or a repeated one is a 400 naming it. Checked on the parsed query as
 * Fastify gives it, before anything copies or reads it.
 */
export function checkQueryKeys(query: object, accepted: string[]): void {
  const errors: FieldError[] = [];
  const known = new Set(accepted);
  const list = accepted.length === 0 ? 'this operation takes no query parameters' : `accepted: ${accepted.join(', ')}`;
  for (const key of Object.keys(query)) {
    if (!known.has(key)) errors.push({ field: quoted(key), message: `is not an accepted query parameter (${list})` });
    else if (Array.isArray((query as Record<string, unknown>)[key])) errors.push({ field: key, message: 'is repeated: give each query parameter once' });
  }
  if (errors.length > 0) throw validationError(errors);
}

/**
 * Routes that declare no query parameters refuse any, as the others refuse unknown ones. A guard rather than an
 * interceptor: registered after the AuthGuard, it runs after the credential and role checks, as an interceptor did, but
 * without the per-request rxjs pipeline an interceptor costs every route (about a tenth of a session read's CPU).
 */
export class NoUndeclaredQueryGuard implements CanActivate {
  private readonly declares = new WeakMap<object, boolean>();

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() === 'http') {
      const handler = context.getHandler();
      let declares = this.declares.get(handler);
      if (declares === undefined) {
        const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), handler.name) ?? {}) as Record<string, unknown>;
        declares = Object.keys(args).some((key) => key.split(':')[0] === String(RouteParamtypes.QUERY));
        this.declares.set(handler, declares);
      }
      const query = context.switchToHttp().getRequest<FastifyRequest>().query;
      if (!declares && query !== null && typeof query === 'object') checkQueryKeys(query, []);
    }
    return true;
  }
}

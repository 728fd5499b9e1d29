import { CanActivate, ExecutionContext } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import type { FastifyRequest } from 'fastify';
import { RequestError, RequestErrorCode } from './domain-error';

export interface FieldError {
  field: string;
  message: string;
}

/** How many problems a 400 lists: enough to fix a body in one go, never an answer as big as the body. */
export const MAX_REPORTED_ERRORS = 20;

/** How much of a field path or message a 400 quotes: paths are built from the client's own keys. */
const MAX_FIELD_CHARS = 200;
const MAX_MESSAGE_CHARS = 500;

/**
 * A 400 validation_failed naming the first problem in `detail` and listing the first MAX_REPORTED_ERRORS in
 * `metadata.errors`; `metadata.errorCount` is how many were found (`total`, when the caller stopped listing early).
 */
export function validationError(errors: FieldError[], total = errors.length): RequestError {
  const listed = errors
    .slice(0, MAX_REPORTED_ERRORS)
    .map(({ field, message }) => ({ field: clip(field, MAX_FIELD_CHARS), message: clip(message, MAX_MESSAGE_CHARS) }));
  const count = Math.max(total, errors.length);
  const first = listed[0];
  const more = count > 1 ? ` (and ${count - 1} more problem${count > 2 ? 's' : ''})` : '';
  return new RequestError(RequestErrorCode.ValidationFailed, first ? `${first.field}: ${first.message}${more}` : 'The request is invalid.', {
    errors: listed,
    errorCount: count,
  });
}

/** Printable, and at most `max` characters. */
function clip(text: string, max: number): string {
  const clean = text.replace(/[^\x20-\x7e\u00a0-\ud7ff\ue000-\ufffd]/g, '?');
  return clean.length > max ? `${clean.slice(0, max)}...` : clean;
}

/** Problems as they are found: the first MAX_REPORTED_ERRORS kept, every one counted. */
export class ProblemList {
  readonly errors: FieldError[] = [];
  total = 0;

  add(field: string, message: string): void {
    if (this.total++ < MAX_REPORTED_ERRORS) this.errors.push({ field, message });
  }

  /** Problems counted but not listed (the caller knows there are more than a 400 lists). */
  counted(more: number): void {
    this.total += more;
  }

  /** Throws the 400 when anything was found. */
  throwIfAny(): void {
    if (this.total > 0) throw validationError(this.errors, this.total);
  }
}

/** A key as it may be quoted back: printable ASCII, and short. */
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
  const problems = new ProblemList();
  const known = new Set(accepted);
  const list = accepted.length === 0 ? 'this operation takes no query parameters' : `accepted: ${accepted.join(', ')}`;
  for (const key of Object.keys(query)) {
    if (!known.has(key)) problems.add(quoted(key), `is not an accepted query parameter (${list})`);
    else if (Array.isArray((query as Record<string, unknown>)[key])) problems.add(key, 'is repeated: give each query parameter once');
  }
  problems.throwIfAny();
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

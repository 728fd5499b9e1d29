import { ArgumentMetadata, CallHandler, ExecutionContext, NestInterceptor, ValidationError, ValidationPipe } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { getMetadataStorage } from 'class-validator';
import type { FastifyRequest } from 'fastify';
import type { Observable } from 'rxjs';
import { RequestError, RequestErrorCode } from './domain-error';

export interface FieldError {
  field: string;
  message: string;
}

/** Flattens class-validator's tree into `a.b[2].c`-style paths, one entry per broken rule. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldError[] {
  return errors.flatMap((error) => {
    const segment = /^\d+$/.test(error.property) ? `[${error.property}]` : error.property;
    const field = parent ? (segment.startsWith('[') ? `${parent}${segment}` : `${parent}.${segment}`) : segment;
    // The same message twice (two rules saying one thing) is one problem.
    const messages = [...new Set(Object.values(error.constraints ?? {}).map((message) => rephrase(message, error.property)))];
    const own = messages.map((message) => ({ field, message }));
    return [...own, ...flattenValidationErrors(error.children ?? [], field)];
  });
}

/** class-validator starts messages with the bare property name; we name the full path instead. */
function rephrase(message: string, property: string): string {
  if (message.startsWith(`property ${property} should not exist`)) return 'is not an accepted field';
  return message.startsWith(`${property} `) ? message.slice(property.length + 1) : message;
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

/** The query parameters a DTO declares (its validated properties, inherited ones included). */
function acceptedKeys(dto: ArgumentMetadata['metatype']): string[] {
  if (!dto) return [];
  const names = getMetadataStorage()
    .getTargetValidationMetadatas(dto, '', true, false)
    .map((rule) => rule.propertyName);
  return [...new Set(names)];
}

/**
 * The query string against the parameters the route declares: an unknown key (`constructor` and
 * `__proto__` included, which class-transformer would drop before validation sees them) or a
 * repeated one is a 400 naming it. Checked on the parsed query as Fastify gives it.
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

/** The validation pipe, with the query string's keys checked before class-transformer reads it. */
export class AppValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'query' && metadata.data === undefined && value !== null && typeof value === 'object') {
      checkQueryKeys(value, acceptedKeys(metadata.metatype));
    }
    return super.transform(value, metadata);
  }
}

/** Routes that declare no query parameters refuse any, as the others refuse unknown ones. */
export class NoUndeclaredQueryInterceptor implements NestInterceptor {
  private readonly declares = new WeakMap<object, boolean>();

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
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
    return next.handle();
  }
}

/**
 * Global validation: unknown properties are rejected (the spec closes its objects), values are
 * transformed into DTO instances, and every problem is listed in `metadata.errors`.
 */
export function createValidationPipe(): ValidationPipe {
  return new AppValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => validationError(flattenValidationErrors(errors)),
  });
}

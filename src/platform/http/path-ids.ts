import { CanActivate, ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { DomainError, RequestError, RequestErrorCode } from './domain-error';
import { isUnstorable } from './json-schema';

/** The error a route answers for an id of its path that names nothing; `params` holds every id of the path. */
export type UnknownId = (id: string, params: Record<string, string>) => DomainError;

const PATH_IDS = 'path-ids';

/**
 * Declares, on a controller or one of its routes (which wins), what each path parameter answers when its id names
 * nothing: the same error the route's service throws for an unknown id, so an id no row can have is answered as one.
 */
export function PathIds(unknown: Record<string, UnknownId>): ClassDecorator & MethodDecorator {
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    Reflect.defineMetadata(PATH_IDS, unknown, descriptor ? (descriptor.value as object) : target);
  };
}

/**
 * Ids in paths holding text PostgreSQL cannot store or compare (NUL, unpaired surrogates) cannot name anything, and a
 * statement given one fails (`invalid byte sequence for encoding "UTF8": 0x00`), which would be a 500. They answer the
 * route's 404 here, after the credential and role checks and before any pipe, handler or statement sees them. Other
 * ids the route cannot have (a malformed UUID, one too long) reach its service, which answers them as unknown.
 */
export class PathIdGuard implements CanActivate {
  private readonly declared = new WeakMap<object, Record<string, UnknownId>>();

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const params = context.switchToHttp().getRequest<FastifyRequest>().params as Record<string, string> | null | undefined;
    if (!params) return true;
    for (const [name, id] of Object.entries(params)) {
      if (typeof id === 'string' && !isUnstorable(id)) continue;
      const unknown = this.unknownIdsOf(context)[name];
      throw unknown ? unknown(String(id), params) : new RequestError(RequestErrorCode.RouteNotFound, `${name}: names nothing here.`);
    }
    return true;
  }

  private unknownIdsOf(context: ExecutionContext): Record<string, UnknownId> {
    const handler = context.getHandler();
    let unknown = this.declared.get(handler);
    if (!unknown) {
      const of = (target: object) => (Reflect.getMetadata(PATH_IDS, target) ?? {}) as Record<string, UnknownId>;
      unknown = { ...of(context.getClass()), ...of(handler) };
      this.declared.set(handler, unknown);
    }
    return unknown;
  }
}

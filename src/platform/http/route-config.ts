import type { FastifyRequest } from 'fastify';

/** Nest's FastifyAdapter hands this metadata of a handler to Fastify as the route's `config`. */
const FASTIFY_ROUTE_CONFIG_METADATA = '__fastify_route_config__';

/**
 * What the request edge (onRequest hooks, before any body is read) needs to know of a route.
 * Fastify's `request.routeOptions.config` carries it there, where Nest's metadata is out of reach.
 */
export interface EdgeRouteConfig {
  /** Needs no credential. */
  public?: boolean;
  /** A load balancer's probe: never rate limited. */
  probe?: boolean;
  /** Takes bodies up to MESSAGE_BODY_LIMIT_BYTES rather than BODY_LIMIT_BYTES. */
  messageBody?: boolean;
  /** Answers pages of messages (up to MESSAGE_PAGE_MAX_BYTES): serialized a piece at a time (installLargeAnswers). */
  largeAnswer?: boolean;
  /** Authenticated calls have a limit of their own (the route's), and do not spend the shared rate limits. */
  ownRateLimit?: boolean;
  /** The worker channel: a worker's session token counts the request against that worker's rate limit. */
  workerChannel?: boolean;
}

/**
 * Adds to a route's Fastify config. Unlike Nest's `@RouteConfig`, which replaces the config,
 * several of these compose. On a class it applies to each of its methods.
 */
export function EdgeConfig(patch: EdgeRouteConfig): MethodDecorator & ClassDecorator {
  const merge = (handler: object) => {
    const current = (Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler) ?? {}) as Record<string, unknown>;
    Reflect.defineMetadata(FASTIFY_ROUTE_CONFIG_METADATA, { ...current, ...patch }, handler);
  };
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (descriptor) {
      merge(descriptor.value as object);
      return;
    }
    const prototype = (target as { prototype: Record<string, unknown> }).prototype;
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const member = Object.getOwnPropertyDescriptor(prototype, name)?.value as unknown;
      if (name !== 'constructor' && typeof member === 'function') merge(member);
    }
  };
}

/** The edge config of the route a request matched; empty for unknown routes. */
export function edgeConfigOf(request: FastifyRequest): EdgeRouteConfig {
  return (request.routeOptions.config ?? {}) as EdgeRouteConfig;
}

/**
 * A route whose frequent calls would spend the credential's and the organization's budgets (an agent's live text, ten a
 * second) and starve the calls that matter: it counts its calls itself instead.
 */
export const OwnRateLimit = () => EdgeConfig({ ownRateLimit: true });

/** Add-message routes: base64 images and files ride in their bodies, so they take MESSAGE_BODY_LIMIT_BYTES. */
export const MessageSizedBody = () => EdgeConfig({ messageBody: true });

/** Routes that answer pages of messages, up to MESSAGE_PAGE_MAX_BYTES: serialized without holding up other requests. */
export const MessageSizedAnswer = () => EdgeConfig({ largeAnswer: true });

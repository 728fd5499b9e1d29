import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance } from 'fastify';

/** What the code serving a request may know of it without being handed the request. */
export interface RequestContext {
  requestId: string;
  /** The client's address (behind a trusted proxy, the one it names). */
  ip: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs the rest of each request's work in its context (the first onRequest hook). */
export function installRequestContext(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, _reply, done) => {
    storage.run({ requestId: request.id, ip: request.ip }, done);
  });
}

/** The request being served, or undefined outside one (jobs, start-up, the CLI). */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

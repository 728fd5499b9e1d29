import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** What the code serving a request may know of it without being handed the request. */
export interface RequestContext {
  requestId: string;
  /** The client's address (behind a trusted proxy, the one it names). */
  ip: string;
  /** Work the answer waits for (the numbering of the events the request's commands raised). */
  before: Array<Promise<unknown>>;
}

const storage = new AsyncLocalStorage<RequestContext>();
const contexts = new WeakMap<FastifyRequest, RequestContext>();

/** Runs the rest of each request's work in its context (the first onRequest hook), and holds the answer for `answerAfter`. */
export function installRequestContext(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, _reply, done) => {
    const context: RequestContext = { requestId: request.id, ip: request.ip, before: [] };
    contexts.set(request, context);
    storage.run(context, done);
  });
  fastify.addHook('onSend', (request, _reply, payload, done) => {
    const context = contexts.get(request);
    if (!context || context.before.length === 0) return done(null, payload);
    void Promise.all(context.before.splice(0)).then(() => done(null, payload));
  });
}

/** Holds the answer of the request being served (if any) until `work` has settled; `work` must not reject. */
export function answerAfter(work: Promise<unknown>): void {
  storage.getStore()?.before.push(work);
}

/** The request being served, or undefined outside one (jobs, start-up, the CLI). */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

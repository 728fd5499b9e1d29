import { startTracing } from './tracing';

/**
 * Imported first by the server's entry point, so that the instrumentations are in place before `http`, `pg` and
 * `fastify` are first required (they patch those modules as they load).
 */
export const tracing = startTracing();

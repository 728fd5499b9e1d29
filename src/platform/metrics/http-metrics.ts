import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Metrics } from './metrics';

/** Requests no route matched share one label, so probing for paths cannot make a series per path. */
const UNMATCHED = '(unmatched)';

const routeOf = (request: FastifyRequest) => request.routeOptions.url ?? UNMATCHED;

/**
 * Times every answered request by its route's pattern (never the path: ids would make a series each), its method and
 * its status: the histogram's `_count` is the request rate, and its 5xx share the error rate. Requests whose client
 * went away before the answer (a long poll given up) are counted apart.
 */
export function installHttpMetrics(fastify: FastifyInstance, metrics: Metrics): void {
  const duration = metrics.histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from a request to its answer, by route pattern, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
  });
  const aborted = metrics.counter({
    name: 'http_requests_aborted_total',
    help: 'Requests whose client closed the connection before the answer, by route pattern and method.',
    labelNames: ['route', 'method'] as const,
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    duration.observe({ route: routeOf(request), method: request.method, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    done();
  });
  fastify.addHook('onRequestAbort', (request, done) => {
    aborted.inc({ route: routeOf(request), method: request.method });
    done();
  });
}

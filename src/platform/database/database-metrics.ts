import { Client, Pool } from 'pg';
import type { Metrics } from '../metrics';

/**
 * The pool's `pg` client, timing each query it is given (TypeORM's and the named statements alike) from the call to
 * its result, waiting behind the connection's earlier queries included: what a request waits for.
 */
export function timedClient(metrics: Metrics): typeof Client {
  const duration = metrics.histogram({
    name: 'db_query_duration_seconds',
    help: 'Time of each database query from its call to its result, by outcome (ok, error).',
    labelNames: ['outcome'] as const,
  });
  return class TimedClient extends Client {
    // pg's overloads (callback, submittable, promise) pass through untouched; only the promise form is timed.
    override query(...args: unknown[]): never {
      const started = performance.now();
      const result = (Client.prototype.query as (...args: unknown[]) => unknown).apply(this, args);
      if (typeof (result as Promise<unknown> | undefined)?.then === 'function') {
        const observe = (outcome: 'ok' | 'error') => duration.observe({ outcome }, (performance.now() - started) / 1000);
        (result as Promise<unknown>).then(
          () => observe('ok'),
          () => observe('error'),
        );
      }
      return result as never;
    }
  };
}

/** The pool's connections (busy, idle), its size limit and the callers waiting for a connection, read when scraped. */
export function watchPool(metrics: Metrics, pool: Pool, max: number): void {
  metrics.gauge({
    name: 'db_pool_connections',
    help: 'Open connections of the database pool, by state (busy, idle).',
    labelNames: ['state'] as const,
    read: () => [
      { labels: { state: 'busy' }, value: pool.totalCount - pool.idleCount },
      { labels: { state: 'idle' }, value: pool.idleCount },
    ],
  });
  metrics.gauge({ name: 'db_pool_max_connections', help: 'Most connections the database pool opens.' }).set(max);
  metrics.gauge({ name: 'db_pool_waiting', help: 'Queries waiting for a free connection of the pool.', read: () => pool.waitingCount });
}

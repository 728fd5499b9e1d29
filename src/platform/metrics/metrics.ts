import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, LabelValues, Registry } from 'prom-client';

/** Every metric of ours starts with this; the process's own (CPU, memory, event loop) keep prom-client's names. */
export const PREFIX = 'agent_platform_';

/** Seconds: from a quick read to a long poll's whole wait. */
export const DURATION_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** What a gauge read at scrape time reports: one value, or one per set of labels. */
export type Reading<L extends string> = number | Array<{ labels: LabelValues<L>; value: number }>;

interface Definition<L extends string> {
  /** Without the prefix. */
  name: string;
  help: string;
  labelNames?: readonly L[];
}

/**
 * This instance's Prometheus metrics (prom-client), served at `/metrics`. A registry per application, not
 * prom-client's global one, so two applications in one process (the tests) count apart. Each module defines the
 * metrics of what it owns here; values read at scrape time (`collect`) must be cheap: a scrape comes every 15 s or so
 * from each Prometheus, and answers within its timeout.
 */
@Injectable()
export class Metrics {
  readonly registry = new Registry();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  counter<L extends string>(definition: Definition<L>): Counter<L> {
    return new Counter({ ...this.named(definition), registers: [this.registry] });
  }

  histogram<L extends string>(definition: Definition<L> & { buckets?: number[] }): Histogram<L> {
    return new Histogram({ ...this.named(definition), buckets: definition.buckets ?? DURATION_BUCKETS, registers: [this.registry] });
  }

  /**
   * A gauge; with `read`, its value is read when scraped. A read that fails (the database away) keeps the last value
   * rather than failing the whole scrape, which would hide every other figure when they matter most.
   */
  gauge<L extends string>(definition: Definition<L> & { read?: () => Reading<L> | Promise<Reading<L>> }): Gauge<L> {
    const { read } = definition;
    const collect = read
      ? async function (this: Gauge<L>) {
          let reading: Reading<L>;
          try {
            reading = await read();
          } catch {
            return;
          }
          if (typeof reading === 'number') this.set(reading);
          else for (const { labels, value } of reading) this.set(labels, value);
        }
      : undefined;
    return new Gauge({ ...this.named(definition), collect, registers: [this.registry] });
  }

  /** The exposition, in Prometheus's text format. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private named<L extends string>({ name, help, labelNames }: Definition<L>) {
    return { name: `${PREFIX}${name}`, help, labelNames: labelNames ?? [] };
  }
}

import { Injectable } from '@nestjs/common';
import { Metrics } from '../../../platform/metrics';
import { ComputersRepository } from '../computers.repository';

/** The provisioning queue as operators see it in `/metrics`: the same figures on every instance, read from the database. */
@Injectable()
export class ProvisioningMetrics {
  constructor(repository: ComputersRepository, metrics: Metrics) {
    metrics.gauge({
      name: 'provisioning_steps',
      help: 'The provisioning queue (all instances): steps of provisioning computers, by status (pending, running).',
      labelNames: ['status'] as const,
      async collect() {
        // A scrape while the database is away keeps the last figures rather than failing.
        const queued = await repository.queuedSteps().catch(() => null);
        if (queued) for (const [status, n] of Object.entries(queued)) this.set({ status }, n);
      },
    });
  }
}

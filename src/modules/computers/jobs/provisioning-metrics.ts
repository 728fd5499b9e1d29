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
      read: async () => Object.entries(await repository.queuedSteps()).map(([status, value]) => ({ labels: { status }, value })),
    });
  }
}

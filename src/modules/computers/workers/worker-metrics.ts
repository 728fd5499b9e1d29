import { Injectable } from '@nestjs/common';
import { Metrics } from '../../../platform/metrics';
import { WorkerChannelService } from './worker-channel.service';
import { WorkersRepository } from './workers.repository';

/**
 * Workers as operators see them in `/metrics`: the fleet and the computers waiting for it, the same on every instance
 * (read from the database), and the workers' claims waiting on this instance.
 */
@Injectable()
export class WorkerMetrics {
  constructor(workers: WorkersRepository, channel: WorkerChannelService, metrics: Metrics) {
    metrics.gauge({
      name: 'workers_online',
      help: 'Workers online, all pools of all organizations (all instances).',
      read: async () => (await workers.fleet()).online,
    });
    metrics.gauge({
      name: 'worker_computers',
      help: 'Managed computers created for worker pools (all instances), by placement: placed on a worker, or waiting for one.',
      labelNames: ['placement'] as const,
      read: async () => {
        const fleet = await workers.fleet();
        return [
          { labels: { placement: 'placed' }, value: fleet.placed },
          { labels: { placement: 'waiting' }, value: fleet.waiting },
        ];
      },
    });
    metrics.gauge({ name: 'worker_claims_open', help: "Workers' claims (long polls) waiting on this instance.", read: () => channel.waitingClaims() });
  }
}

import { Module } from '@nestjs/common';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';

/** What operators and their tools read: the probes and the Prometheus metrics. */
@Module({ controllers: [HealthController, MetricsController] })
export class HealthModule {}

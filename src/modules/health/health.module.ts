import { Module } from '@nestjs/common';
import { Draining } from './draining';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';

/** What operators and their tools read: the probes and the Prometheus metrics; and the instance's way out (Draining). */
@Module({ controllers: [HealthController, MetricsController], providers: [Draining], exports: [Draining] })
export class HealthModule {}

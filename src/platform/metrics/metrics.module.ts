import { Global, Module } from '@nestjs/common';
import { Metrics } from './metrics';

/** The instance's one metrics registry (see Metrics); every module defines its metrics on it. */
@Global()
@Module({ providers: [Metrics], exports: [Metrics] })
export class MetricsModule {}

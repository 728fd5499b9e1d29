import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { ConfigModule } from '../config/config.module';
import {
  AuthModule,
  ComputerTokenLookup,
  DefaultControlsReader,
  NoComputerTokens,
  NoWorkerSessions,
  OrganizationControlsReader,
  WorkerSessionLookup,
} from '../modules/auth';
import { DatabaseModule } from '../platform/database/database.module';
import { MetricsModule } from '../platform/metrics';
import { EventsModule } from '../platform/events';
import { WorkerPoolsModule } from '../modules/computers';

/**
 * Auth's contracts as the operator's commands need them: no computer token or worker session is valid, and the
 * controls are the defaults (the operator is bound by none of them).
 */
@Global()
@Module({
  providers: [
    { provide: OrganizationControlsReader, useClass: DefaultControlsReader },
    { provide: ComputerTokenLookup, useClass: NoComputerTokens },
    { provide: WorkerSessionLookup, useClass: NoWorkerSessions },
  ],
  exports: [OrganizationControlsReader, ComputerTokenLookup, WorkerSessionLookup],
})
class CliContractsModule {}

/** What operator commands need: the database, the event log, the Auth services and worker pools, no HTTP. */
@Module({})
export class CliModule {
  static register(config: AppConfig): DynamicModule {
    return {
      module: CliModule,
      imports: [ConfigModule.register(config), MetricsModule, DatabaseModule, EventsModule, CliContractsModule, AuthModule, WorkerPoolsModule],
    };
  }
}

import { Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { Metrics } from '../metrics';
import { DatabaseProbe } from './database-probe';
import { openDatabase, OpenDatabase } from './open-database';
import { Sql } from './sql';

export const OPEN_DATABASE = Symbol('OPEN_DATABASE');

/**
 * Owns the connection for the whole process. The data source closes in onApplicationShutdown,
 * which Nest calls after the HTTP server has finished its in-flight requests.
 */
@Global()
@Module({
  providers: [
    {
      provide: OPEN_DATABASE,
      inject: [AppConfig, Metrics],
      useFactory: (config: AppConfig, metrics: Metrics) => openDatabase(config, { metrics }),
    },
    {
      provide: DataSource,
      inject: [OPEN_DATABASE],
      useFactory: (db: OpenDatabase) => db.dataSource,
    },
    Sql,
    DatabaseProbe,
  ],
  exports: [DataSource, Sql, DatabaseProbe],
})
export class DatabaseModule implements OnApplicationShutdown {
  private readonly logger = new Logger(DatabaseModule.name);

  constructor(@Inject(OPEN_DATABASE) private readonly db: OpenDatabase) {}

  async onApplicationShutdown(): Promise<void> {
    await this.db.close();
    this.logger.log('Database closed');
  }
}

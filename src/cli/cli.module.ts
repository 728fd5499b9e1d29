import { DynamicModule, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { ConfigModule } from '../config/config.module';
import { AuthModule } from '../modules/auth';
import { DatabaseModule } from '../platform/database/database.module';

/** What operator commands need: the database and the Auth services, no HTTP. */
@Module({})
export class CliModule {
  static register(config: AppConfig): DynamicModule {
    return { module: CliModule, imports: [ConfigModule.register(config), DatabaseModule, AuthModule] };
  }
}

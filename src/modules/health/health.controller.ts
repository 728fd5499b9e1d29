import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { DomainError, ErrorKind } from '../../platform/http/domain-error';
import { V0ErrorSchema } from '../../platform/http/openapi';
import { Public } from '../auth';

class HealthView {
  @ApiProperty({ example: 'ok' })
  status: 'ok';

  @ApiProperty({ enum: ['postgres', 'pglite'] })
  database: string;
}

class DatabaseUnavailableError extends DomainError<'database_unavailable'> {
  readonly kind = ErrorKind.Unavailable;
}

@ApiTags('Health')
@Controller('healthz')
export class HealthController {
  constructor(
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @Public({ probe: true })
  @ApiOperation({ summary: 'Liveness and readiness', description: 'No authentication. 200 when the database answers, 503 otherwise.' })
  @ApiOkResponse({ type: HealthView })
  @ApiServiceUnavailableResponse({ type: V0ErrorSchema })
  async check(): Promise<HealthView> {
    try {
      await this.dataSource.query('SELECT 1');
    } catch {
      throw new DatabaseUnavailableError('database_unavailable', 'The database does not answer.');
    }
    return { status: 'ok', database: this.config.engine };
  }
}

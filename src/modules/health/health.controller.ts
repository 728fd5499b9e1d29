import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { AppConfig } from '../../config/app-config';
import { DomainError, ErrorKind } from '../../platform/http/domain-error';
import { V0ErrorSchema } from '../../platform/http/openapi';
import { Sql } from '../../platform/database/sql';
import { Public } from '../auth';

/** Past this, the database counts as not answering: a request would wait as long. */
const READINESS_TIMEOUT_MS = 2_000;

class HealthView {
  @ApiProperty({ example: 'ok' })
  status: 'ok';

  @ApiProperty({ enum: ['postgres', 'pglite'] })
  database: string;
}

class LivenessView {
  @ApiProperty({ example: 'ok' })
  status: 'ok';
}

class DatabaseUnavailableError extends DomainError<'database_unavailable'> {
  readonly kind = ErrorKind.Unavailable;
}

@ApiTags('Health')
@Controller()
export class HealthController {
  constructor(
    private readonly sql: Sql,
    private readonly config: AppConfig,
  ) {}

  /**
   * Readiness: a named statement on a table, through the pool, exactly as requests run theirs, so
   * a connection or session that would fail requests fails this too.
   */
  @Get('healthz')
  @Public({ probe: true })
  @ApiOperation({
    summary: 'Readiness: whether requests can be served',
    description:
      'No authentication. Runs a prepared statement on the database through the same pool and path as every request: ' +
      `200 when it answers, 503 (\`database_unavailable\`) when it fails or takes longer than ${READINESS_TIMEOUT_MS} ms. ` +
      'Point a load balancer here.',
  })
  @ApiOkResponse({ type: HealthView })
  @ApiServiceUnavailableResponse({ type: V0ErrorSchema })
  async ready(): Promise<HealthView> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), READINESS_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.sql.query('health.ready', 'SELECT 1 AS ok FROM migrations LIMIT 1', []), timeout]);
    } catch {
      throw new DatabaseUnavailableError('database_unavailable', 'The database does not answer: requests cannot be served.');
    } finally {
      clearTimeout(timer);
    }
    return { status: 'ok', database: this.config.engine };
  }

  /** Liveness: the process serves HTTP; says nothing of the database, so a restart is not asked for an outage elsewhere. */
  @Get('livez')
  @Public({ probe: true })
  @ApiOperation({
    summary: 'Liveness: whether the process serves HTTP',
    description: 'No authentication, no database: 200 as long as the process answers. Restart the process when this fails; ' + 'route traffic by `/healthz`.',
  })
  @ApiOkResponse({ type: LivenessView })
  live(): LivenessView {
    return { status: 'ok' };
  }
}

import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { AppConfig } from '../../config/app-config';
import type { ApiSchema } from '../../platform/http/api-schema';
import { answerObject, ref, SchemaObject, SchemaRegistry } from '../../platform/http/json-schema';
import { ApiErrorExamples, V0_ERROR } from '../../platform/http/openapi';
import { DatabaseProbe } from '../../platform/database/database-probe';
import { DatabaseUnavailableError } from '../../platform/database/database-unavailable';
import { Public } from '../auth';
import { Draining, shuttingDown } from './draining';

/** Past this, the database counts as not answering: a request would wait as long. */
const READINESS_TIMEOUT_MS = 2_000;

const ok: SchemaObject = { type: 'string', enum: ['ok'], example: 'ok' };
/** What the probes answer, published as they are. */
new SchemaRegistry('health').add({
  HealthStatus: answerObject({ status: ok, database: { type: 'string', enum: ['postgres', 'pglite'] } }),
  LivenessStatus: answerObject({ status: ok }),
});

const databaseUnavailable = () => new DatabaseUnavailableError('The database does not answer: requests cannot be served.');

@ApiTags('Health')
@Controller()
export class HealthController {
  constructor(
    private readonly database: DatabaseProbe,
    private readonly config: AppConfig,
    private readonly draining: Draining,
  ) {}

  /** Readiness: the database's probe (a named statement through the pool, as requests run theirs), within a bound. */
  @Get('healthz')
  @Public({ probe: true })
  @ApiOperation({
    summary: 'Readiness: whether requests can be served',
    description:
      'No authentication. Runs a prepared statement on the database through the same pool and path as every request: ' +
      `200 when it answers, 503 (\`database_unavailable\`) when it fails or takes longer than ${READINESS_TIMEOUT_MS} ms. ` +
      'Point a load balancer here. 503 `shutting_down` once the instance has been asked to stop (SIGTERM): it still serves ' +
      'other requests for `SHUTDOWN_DRAIN_MS`, so that the load balancer stops sending before it stops listening.',
  })
  @ApiOkResponse({ schema: ref('HealthStatus') })
  @ApiServiceUnavailableResponse({ schema: V0_ERROR })
  @ApiErrorExamples(databaseUnavailable())
  async ready(): Promise<ApiSchema<'HealthStatus'>> {
    if (this.draining.draining) throw shuttingDown();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), READINESS_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.database.check(), timeout]);
    } catch {
      throw databaseUnavailable();
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
  @ApiOkResponse({ schema: ref('LivenessStatus') })
  live(): ApiSchema<'LivenessStatus'> {
    return { status: 'ok' };
  }
}

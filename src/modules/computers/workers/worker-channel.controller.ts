import { Body, Controller, Headers, HttpCode, Ip, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { ApiErrorExamples, ApiRequestExample, V0_ERROR } from '../../../platform/http/openapi';
import { ComputerQuota, QuotaExceededError } from '../domain/computers.errors';
import { ref } from '../../../platform/http/json-schema';
import { WorkerCredentials } from '../../auth';
import { RegisteredWorkerView, RegisterWorkerInput, WorkerHeartbeatInput, WorkerHeartbeatView, workerPoolSchemas } from './worker-pool.schemas';
import { WorkerChannelService } from './worker-channel.service';

const SESSION =
  "Authorization: `Bearer wks_...`, the session token registration returned. 401 `invalid_worker_token` when it is not valid or the worker's session " +
  'ended (`metadata.workerStatus`: `left`, `lost`, `revoked`, `evicted`): the worker registers again.';

/**
 * The worker channel (added; the spec has none): what `agent-platform worker` calls, always from the worker's side (the
 * worker needs no inbound port). API keys, JWTs and agent tokens are not accepted here; worker tokens nowhere else.
 */
@ApiTags('Worker channel')
@Controller('api/v0/worker')
@WorkerCredentials()
@ApiBadRequestResponse({ description: 'Invalid input; `detail` names the field, `metadata.errors` lists all.', schema: V0_ERROR })
export class WorkerChannelController {
  constructor(private readonly channel: WorkerChannelService) {}

  @Post('register')
  @ApiOperation({
    summary: 'Register a worker',
    description:
      'Authorization: `Bearer wkt_...`, an enrollment token of the pool. The worker joins that pool, `online` for `leaseMs` from now, and gets its ' +
      "session token, shown only in this answer. `capacity.computers` is lowered to the pool's `maxComputersPerWorker`. " +
      'Refused: an unknown, revoked or expired token (401 `invalid_worker_token`); an unsandboxed worker in a pool without `allowUnsandboxed` ' +
      '(403 `worker_sandbox_required`); `WORKERS_PER_POOL` workers online already (409 `quota_exceeded`).',
  })
  @ApiBody({ schema: ref('RegisterWorkerBody') })
  @ApiRequestExample({
    name: 'gpu-01',
    hostname: 'gpu-01.lab.example',
    labels: ['gpu'],
    capacity: { computers: 4, cpus: 16, memoryMb: 65536, diskMb: 512000 },
    sandboxed: true,
    version: '0.1.0',
  })
  @ApiCreatedResponse({ schema: ref('RegisteredWorkerView') })
  @ApiUnauthorizedResponse({ description: '`invalid_worker_token`: the enrollment token is unknown, revoked or expired.', schema: V0_ERROR })
  @ApiForbiddenResponse({ description: '`worker_sandbox_required`: the worker is not sandboxed and the pool does not allow it.', schema: V0_ERROR })
  @ApiConflictResponse({ description: '`quota_exceeded` (`WORKERS_PER_POOL`).', schema: V0_ERROR })
  @ApiErrorExamples(
    new QuotaExceededError(ComputerQuota.Workers, 100, 'Worker pool "gpu-lab" has 100 workers online, as many as a pool may have (WORKERS_PER_POOL).'),
  )
  async register(
    @Headers('authorization') authorization: string | undefined,
    @Ip() ip: string,
    @Body(workerPoolSchemas.pipe('RegisterWorkerBody')) body: RegisterWorkerInput,
  ): Promise<RegisteredWorkerView> {
    const { worker, pool, sessionToken } = await this.channel.register(authorization, body, ip);
    return {
      workerId: worker.id,
      poolId: pool.id,
      poolName: pool.name,
      sessionToken,
      capacity: worker.capacity,
      leaseMs: this.channel.leaseMs,
      heartbeatMs: this.channel.heartbeatMs,
      leaseExpiresAt: worker.leaseExpiresAt.getTime(),
    };
  }

  @Post('heartbeat')
  @HttpCode(200)
  @ApiOperation({ summary: "Keep the worker's lease", description: `${SESSION} Renews the lease by \`leaseMs\` and records the usage sent.` })
  @ApiBody({ schema: ref('WorkerHeartbeatBody') })
  @ApiRequestExample({ usage: { cpuPercent: 140, memoryMb: 8192, diskMb: 20480 } })
  @ApiOkResponse({ schema: ref('WorkerHeartbeatView') })
  @ApiUnauthorizedResponse({ description: SESSION, schema: V0_ERROR })
  async heartbeat(
    @Headers('authorization') authorization: string | undefined,
    @Body(workerPoolSchemas.pipe('WorkerHeartbeatBody')) body: WorkerHeartbeatInput,
  ): Promise<WorkerHeartbeatView> {
    const worker = await this.channel.heartbeat(await this.channel.authenticate(authorization), body.usage ?? null);
    return { leaseExpiresAt: worker.leaseExpiresAt.getTime() };
  }

  @Post('leave')
  @HttpCode(204)
  @ApiOperation({ summary: 'Leave the pool', description: `${SESSION} The worker shuts down: its session ends now (\`left\`), not a lease later.` })
  @ApiNoContentResponse({ description: 'Left; the session token answers 401 from now on.' })
  @ApiUnauthorizedResponse({ description: SESSION, schema: V0_ERROR })
  async leave(@Headers('authorization') authorization: string | undefined): Promise<void> {
    await this.channel.leave(await this.channel.authenticate(authorization));
  }
}

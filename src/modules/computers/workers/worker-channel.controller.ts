import { Body, Controller, Get, Headers, HttpCode, Ip, Param, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { ApiErrorExamples, ApiRequestExample, EXAMPLE_ID, V0_ERROR } from '../../../platform/http/openapi';
import { ComputerQuota, computerNotFound, ComputersError, ComputersErrorCode, QuotaExceededError } from '../domain/computers.errors';
import { ref } from '../../../platform/http/json-schema';
import { PathIds } from '../../../platform/http/path-ids';
import { WorkerCredentials } from '../../auth';
import {
  RegisteredWorkerView,
  RegisterWorkerInput,
  WorkerAgentTokenView,
  WorkerClaimInput,
  WorkerClaimView,
  WorkerHeartbeatInput,
  WorkerHeartbeatView,
  workerPoolSchemas,
  WorkerStepFinishInput,
  WorkerStepFinishView,
  WorkerStepLogInput,
} from './worker-pool.schemas';
import { WorkerChannelService } from './worker-channel.service';

const STEP_LOST =
  "`step_claim_lost`: the step is no longer this worker's (finished, taken back after its lease, past its time, or its computer moved or was deleted): stop running it.";
const STEP_LOST_EXAMPLE = new ComputersError(
  ComputersErrorCode.StepClaimLost,
  `Step 1 of computer ${EXAMPLE_ID} is no longer this worker's (finished, taken back, or the computer moved or was deleted): stop it.`,
);
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
    return this.channel.heartbeat(await this.channel.authenticate(authorization), body);
  }

  @Post('claims')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Claim a provisioning step',
    description:
      `${SESSION} The next step of a computer placed on this worker, claimed for it with a lease of \`PROVISIONING_LEASE_MS\` (kept by heartbeats that ` +
      'name it). With `waitMs`, a long poll: it answers `sync: true` when the computers placed on the worker changed (heartbeat to learn how), ' +
      'and `work: null` at the end of the wait. At most 2 claims of one worker wait at once on a server instance (429 `rate_limited`, `Retry-After`).',
  })
  @ApiBody({ schema: ref('WorkerClaimBody') })
  @ApiRequestExample({ waitMs: 25000 })
  @ApiOkResponse({ schema: ref('WorkerClaimView') })
  @ApiUnauthorizedResponse({ description: SESSION, schema: V0_ERROR })
  @ApiTooManyRequestsResponse({ description: '`rate_limited`: this worker already has 2 claims waiting on this instance.', schema: V0_ERROR })
  async claim(
    @Headers('authorization') authorization: string | undefined,
    @Body(workerPoolSchemas.pipe('WorkerClaimBody')) body: WorkerClaimInput,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<WorkerClaimView> {
    const worker = await this.channel.authenticate(authorization);
    // A worker gone while waiting (killed, disconnected) must not be handed a step no one will run.
    const abandoned = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableEnded) abandoned.abort();
    });
    return this.channel.claim(worker, body.waitMs ?? 0, abandoned.signal);
  }

  @Post('steps/log')
  @HttpCode(204)
  @ApiOperation({ summary: "Add to a step's log", description: `${SESSION} Appends output of a step this worker holds to the computer's provisioning log.` })
  @ApiBody({ schema: ref('WorkerStepLogBody') })
  @ApiNoContentResponse({ description: 'Logged.' })
  @ApiUnauthorizedResponse({ description: SESSION, schema: V0_ERROR })
  @ApiConflictResponse({ description: STEP_LOST, schema: V0_ERROR })
  @ApiErrorExamples(STEP_LOST_EXAMPLE)
  async logStep(
    @Headers('authorization') authorization: string | undefined,
    @Body(workerPoolSchemas.pipe('WorkerStepLogBody')) body: WorkerStepLogInput,
  ): Promise<void> {
    await this.channel.logStep(await this.channel.authenticate(authorization), body);
  }

  @Post('steps/finish')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Finish a step',
    description:
      `${SESSION} Completes or fails a step this worker holds: the last step completed makes the computer \`active\`; a failed one puts it in ` +
      "`error`, with `error` shown as the step's. The clone step's `clonedRepoDirectories` are set by the server: the repos' folder names.",
  })
  @ApiBody({ schema: ref('WorkerStepFinishBody') })
  @ApiOkResponse({ schema: ref('WorkerStepFinishView') })
  @ApiUnauthorizedResponse({ description: SESSION, schema: V0_ERROR })
  @ApiConflictResponse({ description: STEP_LOST, schema: V0_ERROR })
  @ApiErrorExamples(STEP_LOST_EXAMPLE)
  async finishStep(
    @Headers('authorization') authorization: string | undefined,
    @Body(workerPoolSchemas.pipe('WorkerStepFinishBody')) body: WorkerStepFinishInput,
  ): Promise<WorkerStepFinishView> {
    return this.channel.finishStep(await this.channel.authenticate(authorization), body);
  }

  @Get('computers/:computerId/agent-token')
  @PathIds({ computerId: (id) => computerNotFound(id) })
  @ApiOperation({
    summary: "A computer's agent token",
    description: `${SESSION} The agent token of a computer placed on this worker, to start its agent with; any other computer is 404. Logged (\`computer.agent_token.released\`).`,
  })
  @ApiOkResponse({ schema: ref('WorkerAgentTokenView') })
  @ApiUnauthorizedResponse({ description: SESSION, schema: V0_ERROR })
  @ApiNotFoundResponse({ description: '`computer_not_found`: no computer of that id is placed on this worker.', schema: V0_ERROR })
  @ApiErrorExamples(computerNotFound(EXAMPLE_ID))
  async agentToken(
    @Headers('authorization') authorization: string | undefined,
    @Param('computerId') computerId: string,
    @Ip() ip: string,
  ): Promise<WorkerAgentTokenView> {
    return this.channel.agentToken(await this.channel.authenticate(authorization), computerId, ip);
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

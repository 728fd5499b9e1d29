import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { ApiErrorExamples, ApiRequestExample, EXAMPLE_ID, V0_ERROR } from '../../../platform/http/openapi';
import { pageSize } from '../../../platform/http/pagination';
import { QuerySchema, ref } from '../../../platform/http/json-schema';
import { PathIds } from '../../../platform/http/path-ids';
import { actingAs, Authenticated, CurrentPrincipal, Principal, Role } from '../../auth';
import {
  ComputersError,
  ComputersErrorCode,
  enrollmentTokenNotFound,
  tooManyEnrollmentTokens,
  workerNotFound,
  workerPoolNameTaken,
  workerPoolNotFound,
} from '../domain/computers.errors';
import { WorkerEnrollmentTokenEntity, WorkerEntity, WorkerPoolEntity } from '../entities';
import {
  CreatedEnrollmentTokenView,
  CreateEnrollmentTokenInput,
  CreateWorkerPoolInput,
  EnrollmentTokenListView,
  EnrollmentTokenView,
  PageInput,
  UpdateWorkerPoolInput,
  WorkerListView,
  WorkerPoolListView,
  workerPoolSchemas,
  WorkerView,
  WorkerPoolView,
} from './worker-pool.schemas';
import { MAX_ENROLLMENT_TOKENS_PER_POOL, PoolActor, WorkerPoolsService } from './worker-pools.service';

const POOL_NOT_FOUND = {
  description: "`worker_pool_not_found`: no such pool in your organization (another organization's is unknown here).",
  schema: V0_ERROR,
};
const NAME_TAKEN = { description: '`worker_pool_name_taken`: the organization has a pool of that name.', schema: V0_ERROR };

const actorOf = (principal: Principal): PoolActor => ({ organizationId: principal.organizationId, userId: principal.userId, by: actingAs(principal) });

/**
 * Worker pools (added; the spec has none): groups of machines, each running `agent-platform worker`, that managed
 * computers are placed on instead of the server's own host. Owners and managers only.
 */
@ApiTags('Worker pools')
@Controller('api/v0/worker-pools')
@Authenticated(Role.Owner, Role.Manager)
@ApiBadRequestResponse({ description: 'Invalid input; `detail` names the field, `metadata.errors` lists all.', schema: V0_ERROR })
@PathIds({
  poolId: (id) => workerPoolNotFound(id),
  tokenId: (id, { poolId }) => enrollmentTokenNotFound(poolId, id),
  workerId: (id, { poolId }) => workerNotFound(poolId, id),
})
@ApiErrorExamples(workerPoolNotFound(EXAMPLE_ID))
export class WorkerPoolsController {
  constructor(private readonly pools: WorkerPoolsService) {}

  @Post()
  @ApiOperation({
    summary: 'Create a worker pool',
    description:
      'A pool of the organization that workers register into with one of its enrollment tokens. ' +
      'An organization may have `WORKER_POOLS_PER_ORGANIZATION` pools (default 20; one more: 409 `quota_exceeded`).',
  })
  @ApiBody({ schema: ref('CreateWorkerPoolBody') })
  @ApiRequestExample({ name: 'gpu-lab', description: 'The two GPU machines in rack 2' })
  @ApiCreatedResponse({ schema: ref('WorkerPoolView') })
  @ApiConflictResponse({ description: `${NAME_TAKEN.description} Or \`quota_exceeded\` (\`WORKER_POOLS_PER_ORGANIZATION\`).`, schema: V0_ERROR })
  @ApiErrorExamples(workerPoolNameTaken('gpu-lab'))
  async create(
    @CurrentPrincipal() principal: Principal,
    @Body(workerPoolSchemas.pipe('CreateWorkerPoolBody')) body: CreateWorkerPoolInput,
  ): Promise<WorkerPoolView> {
    return toWorkerPoolView(await this.pools.create(actorOf(principal), body));
  }

  @Get()
  @ApiOperation({ summary: 'List worker pools', description: 'Newest first.' })
  @ApiOkResponse({ schema: ref('WorkerPoolListView') })
  async list(@CurrentPrincipal() principal: Principal, @QuerySchema(workerPoolSchemas, 'ListWorkerPoolsQuery') query: PageInput): Promise<WorkerPoolListView> {
    const page = await this.pools.list(principal.organizationId, query.cursor, pageSize(query));
    return { workerPools: page.items.map(toWorkerPoolView), pagination: page.pagination };
  }

  @Get(':poolId')
  @ApiOperation({ summary: 'Get a worker pool' })
  @ApiOkResponse({ schema: ref('WorkerPoolView') })
  @ApiNotFoundResponse(POOL_NOT_FOUND)
  async get(@CurrentPrincipal() principal: Principal, @Param('poolId') poolId: string): Promise<WorkerPoolView> {
    return toWorkerPoolView(await this.pools.find(principal.organizationId, poolId));
  }

  @Patch(':poolId')
  @ApiOperation({ summary: 'Update a worker pool', description: 'Renames it or changes its description; at least one of the two.' })
  @ApiBody({ schema: ref('UpdateWorkerPoolBody') })
  @ApiRequestExample({ description: 'The GPU machines of racks 2 and 3' })
  @ApiOkResponse({ schema: ref('WorkerPoolView') })
  @ApiNotFoundResponse(POOL_NOT_FOUND)
  @ApiConflictResponse(NAME_TAKEN)
  @ApiErrorExamples(workerPoolNameTaken('gpu-lab'))
  async update(
    @CurrentPrincipal() principal: Principal,
    @Param('poolId') poolId: string,
    @Body(workerPoolSchemas.pipe('UpdateWorkerPoolBody')) body: UpdateWorkerPoolInput,
  ): Promise<WorkerPoolView> {
    return toWorkerPoolView(await this.pools.update(actorOf(principal), poolId, body));
  }

  @Delete(':poolId')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete a worker pool',
    description: 'Deletes the pool, its enrollment tokens and its workers (their sessions end). Refused while computers created for the pool remain.',
  })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiNotFoundResponse(POOL_NOT_FOUND)
  @ApiConflictResponse({
    description: '`worker_pool_in_use`: computers were created for the pool (`metadata.computers` says how many); delete them first.',
    schema: V0_ERROR,
  })
  @ApiErrorExamples(
    new ComputersError(ComputersErrorCode.WorkerPoolInUse, 'Worker pool "gpu-lab" has 3 computer(s) created for it; delete them first.', { computers: 3 }),
  )
  async remove(@CurrentPrincipal() principal: Principal, @Param('poolId') poolId: string): Promise<void> {
    await this.pools.remove(actorOf(principal), poolId);
  }

  @Post(':poolId/enrollment-tokens')
  @ApiOperation({
    summary: 'Create an enrollment token',
    description:
      'A token `agent-platform worker` registers into this pool with. The token is in this answer only; the server keeps its hash. ' +
      `A pool may have ${MAX_ENROLLMENT_TOKENS_PER_POOL} tokens that still work (neither revoked nor expired).`,
  })
  @ApiBody({ schema: ref('CreateEnrollmentTokenBody') })
  @ApiRequestExample({ name: 'rack 2' })
  @ApiCreatedResponse({ schema: ref('CreatedEnrollmentTokenView') })
  @ApiNotFoundResponse(POOL_NOT_FOUND)
  @ApiConflictResponse({ description: `\`too_many_enrollment_tokens\`: the pool has ${MAX_ENROLLMENT_TOKENS_PER_POOL} that still work.`, schema: V0_ERROR })
  @ApiErrorExamples(tooManyEnrollmentTokens(MAX_ENROLLMENT_TOKENS_PER_POOL))
  async createToken(
    @CurrentPrincipal() principal: Principal,
    @Param('poolId') poolId: string,
    @Body(workerPoolSchemas.pipe('CreateEnrollmentTokenBody')) body: CreateEnrollmentTokenInput,
  ): Promise<CreatedEnrollmentTokenView> {
    const { entity, token } = await this.pools.createToken(actorOf(principal), poolId, {
      name: body.name,
      expiresAt: body.expiresAt ? new Date(body.expiresAt) : undefined,
    });
    return { ...toEnrollmentTokenView(entity), token };
  }

  @Get(':poolId/enrollment-tokens')
  @ApiOperation({ summary: 'List enrollment tokens', description: 'Newest first; revoked and expired ones too. Tokens themselves are never shown again.' })
  @ApiOkResponse({ schema: ref('EnrollmentTokenListView') })
  @ApiNotFoundResponse(POOL_NOT_FOUND)
  async listTokens(
    @CurrentPrincipal() principal: Principal,
    @Param('poolId') poolId: string,
    @QuerySchema(workerPoolSchemas, 'ListEnrollmentTokensQuery') query: PageInput,
  ): Promise<EnrollmentTokenListView> {
    const page = await this.pools.listTokens(principal.organizationId, poolId, query.cursor, pageSize(query));
    return { enrollmentTokens: page.items.map(toEnrollmentTokenView), pagination: page.pagination };
  }

  @Delete(':poolId/enrollment-tokens/:tokenId')
  @HttpCode(200)
  @ApiOperation({ summary: 'Revoke an enrollment token', description: 'It registers no worker from now on. Revoking twice is harmless.' })
  @ApiOkResponse({ schema: ref('EnrollmentTokenView') })
  @ApiNotFoundResponse({ description: '`worker_pool_not_found` or `enrollment_token_not_found`: not in this pool of your organization.', schema: V0_ERROR })
  async revokeToken(
    @CurrentPrincipal() principal: Principal,
    @Param('poolId') poolId: string,
    @Param('tokenId') tokenId: string,
  ): Promise<EnrollmentTokenView> {
    return toEnrollmentTokenView(await this.pools.revokeToken(actorOf(principal), poolId, tokenId));
  }

  @Get(':poolId/workers')
  @ApiOperation({
    summary: 'List workers',
    description:
      'The workers registered into the pool, newest first: online ones, and for a week those whose session ended (each restart of a worker registers anew).',
  })
  @ApiOkResponse({ schema: ref('WorkerListView') })
  @ApiNotFoundResponse(POOL_NOT_FOUND)
  async listWorkers(
    @CurrentPrincipal() principal: Principal,
    @Param('poolId') poolId: string,
    @QuerySchema(workerPoolSchemas, 'ListWorkersQuery') query: PageInput,
  ): Promise<WorkerListView> {
    const page = await this.pools.listWorkers(principal.organizationId, poolId, query.cursor, pageSize(query));
    return { workers: page.items.map(toWorkerView), pagination: page.pagination };
  }

  @Delete(':poolId/workers/:workerId')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Evict a worker',
    description:
      "Ends the worker's session at once (`evicted`): its next call is 401, and it must register again with a token that still works. Evicting twice is harmless.",
  })
  @ApiOkResponse({ schema: ref('WorkerView') })
  @ApiNotFoundResponse({ description: '`worker_pool_not_found` or `worker_not_found`: not in this pool of your organization.', schema: V0_ERROR })
  async evict(@CurrentPrincipal() principal: Principal, @Param('poolId') poolId: string, @Param('workerId') workerId: string): Promise<WorkerView> {
    return toWorkerView(await this.pools.evict(actorOf(principal), poolId, workerId));
  }
}

export function toWorkerView(worker: WorkerEntity): WorkerView {
  return {
    id: worker.id,
    poolId: worker.poolId,
    name: worker.name,
    hostname: worker.hostname,
    labels: worker.labels,
    capacity: worker.capacity,
    usage: worker.usage,
    sandboxed: worker.sandboxed,
    version: worker.version,
    status: worker.status,
    registeredAt: worker.registeredAt.getTime(),
    lastSeenAt: worker.lastSeenAt.getTime(),
    leaseExpiresAt: worker.leaseExpiresAt.getTime(),
    endedAt: worker.endedAt?.getTime() ?? null,
  };
}

export function toWorkerPoolView(pool: WorkerPoolEntity): WorkerPoolView {
  return {
    id: pool.id,
    name: pool.name,
    description: pool.description,
    maxComputersPerWorker: pool.maxComputersPerWorker,
    allowUnsandboxed: pool.allowUnsandboxed,
    createdBy: pool.createdBy,
    createdAt: pool.createdAt.getTime(),
    updatedAt: pool.updatedAt.getTime(),
  };
}

export function toEnrollmentTokenView(token: WorkerEnrollmentTokenEntity): EnrollmentTokenView {
  return {
    id: token.id,
    poolId: token.poolId,
    name: token.name,
    prefix: token.prefix,
    createdBy: token.createdBy,
    createdAt: token.createdAt.getTime(),
    lastUsedAt: token.lastUsedAt?.getTime() ?? null,
    expiresAt: token.expiresAt?.getTime() ?? null,
    revokedAt: token.revokedAt?.getTime() ?? null,
  };
}

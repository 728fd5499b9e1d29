import type { ApiSchema } from '../../platform/http/api-schema';
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import { AcceptsComputerTokens, Authenticated, CurrentPrincipal, Principal, Role } from '../auth';
import { ref } from '../../platform/http/json-schema';
import { ApiErrorExamples, ApiRequestExample, EXAMPLE_ID, V0_ERROR } from '../../platform/http/openapi';
import { ComputerView } from './domain/views';
import { ComputersService, RotatedAgentToken, UpdateComputerInput } from './computers.service';
import { CreateComputerInput } from './domain/new-computer';
import { computerSchemas } from './schemas/computer.schemas';
import { PathIds } from '../../platform/http/path-ids';
import { ComputerQuota, ComputersError, ComputersErrorCode, computerNotFound, QuotaExceededError } from './domain/computers.errors';

const PROVISIONING_QUOTA =
  'The organization has `PROVISIONING_PER_ORGANIZATION` (default 5) managed computers provisioning already: `metadata` is ' +
  '`{code: "quota_exceeded", quota: "PROVISIONING_PER_ORGANIZATION", limit}`. Nothing is stored; try again once one of them is `active` or in `error`.';

const NOT_FOUND = "No such computer in your organization, or one you may not see (another organization's, or for a member another member's).";

@ApiTags('Computers')
@Controller('api/v0/computers')
@Authenticated(Role.Owner, Role.Manager, Role.Member)
@ApiBadRequestResponse({ description: 'Invalid input; `detail` names the field, `metadata.errors` lists all.', schema: V0_ERROR })
@PathIds({ computerId: (id) => computerNotFound(id) })
@ApiErrorExamples(computerNotFound(EXAMPLE_ID))
export class ComputersController {
  constructor(private readonly computers: ComputersService) {}

  @Post()
  @ApiOperation({
    summary: 'Create a computer',
    description:
      '`provider: "byom"` registers an existing machine: `hostId` and `remoteUser` are required, `repos`, `autoInstallDeps: true` and `source` are refused; ' +
      'it is `active` at once. `provider: "local"` (managed) prepares a workspace on the server\'s host: `hostId` is assigned (giving one is 400), ' +
      "`remoteUser` defaults to the server's user; it is `provisioning` with its `provisioningSteps` and becomes `active` when they complete, `error` when one fails. " +
      'With `serviceAccountId` (owners and managers) the computer belongs to that service account of the organization (operators make them with the CLI), ' +
      '`ownerPrincipalKind: "service_account"`; a person\'s id is 404 like an unknown one. ' +
      "The answer carries `agentToken` once: the credential the computer's agent uses on the agent channel. " +
      'Per-organization quotas, counted one create at a time (two creates never both take the last slot): `COMPUTERS_PER_ORGANIZATION` ' +
      '(default 100) computers of every kind, `LOCAL_AGENTS_PER_ORGANIZATION` (default 10) `local` computers (each gets an agent run by this server), ' +
      'and `PROVISIONING_PER_ORGANIZATION` (default 5) managed computers provisioning at once.',
  })
  @ApiBody({ schema: ref('CreateComputerBody') })
  @ApiRequestExample({ name: 'Build box', provider: 'byom', hostId: '6f1c2a4e-8b3d-4e5f-9a7b-1c2d3e4f5a6b', remoteUser: 'ci' })
  @ApiCreatedResponse({ schema: ref('Computer') })
  @ApiConflictResponse({
    description:
      'A quota of the organization is full: `metadata` is `{code: "quota_exceeded", quota, limit}`, `quota` being `COMPUTERS_PER_ORGANIZATION` ' +
      'or (for `local`) `LOCAL_AGENTS_PER_ORGANIZATION`. Nothing is stored. Waiting does not help (so 409, not 429): deleting a computer frees a slot.',
    schema: V0_ERROR,
  })
  @ApiErrorExamples(
    new QuotaExceededError(
      ComputerQuota.Computers,
      100,
      'Your organization has 100 computers, as many as it may have (COMPUTERS_PER_ORGANIZATION); delete one to create another.',
    ),
  )
  @ApiTooManyRequestsResponse({ description: PROVISIONING_QUOTA, schema: V0_ERROR })
  @ApiForbiddenResponse({
    description: 'Guests; `serviceAccountId` from a member; or enterprise controls turn this kind of computer off or limit it to other people.',
    schema: V0_ERROR,
  })
  @ApiNotFoundResponse({
    description:
      "`serviceAccountId` naming no service account of your organization (unknown, a person, or another organization's user), or unknown `source.computerId`.",
    schema: V0_ERROR,
  })
  create(@CurrentPrincipal() principal: Principal, @Body(computerSchemas.pipe('CreateComputerBody')) body: CreateComputerInput): Promise<ComputerView> {
    return this.computers.create(principal, body);
  }

  @Get()
  @ApiOperation({ summary: 'List computers', description: 'Newest first. Owners and managers see every computer of the organization, members their own.' })
  @ApiOkResponse({ schema: { type: 'object', required: ['computers'], properties: { computers: { type: 'array', items: ref('Computer') } } } })
  async list(@CurrentPrincipal() principal: Principal): Promise<{ computers: ComputerView[] }> {
    return { computers: await this.computers.list(principal) };
  }

  @Get(':computerId')
  @ApiOperation({ summary: 'Get a computer', description: "Not in the spec; added. Every field, the create response's additions included (not `agentToken`)." })
  @ApiOkResponse({ schema: ref('Computer') })
  @ApiNotFoundResponse({ description: NOT_FOUND, schema: V0_ERROR })
  get(@CurrentPrincipal() principal: Principal, @Param('computerId') computerId: string): Promise<ComputerView> {
    return this.computers.get(principal, computerId);
  }

  @Patch(':computerId')
  @ApiOperation({ summary: 'Update a computer', description: 'Renames it or changes its `remoteUser`; at least one of the two.' })
  @ApiBody({ schema: ref('UpdateComputerBody') })
  @ApiRequestExample({ name: 'Build box (rack 2)' })
  @ApiOkResponse({ schema: ref('Computer') })
  @ApiNotFoundResponse({ description: NOT_FOUND, schema: V0_ERROR })
  update(
    @CurrentPrincipal() principal: Principal,
    @Param('computerId') computerId: string,
    @Body(computerSchemas.pipe('UpdateComputerBody')) body: UpdateComputerInput,
  ): Promise<ComputerView> {
    return this.computers.update(principal, computerId, body);
  }

  @Delete(':computerId')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete a computer',
    description:
      "Not in the spec; added. Deletes the computer and its steps, invalidates its agent token, and removes a managed computer's workspace " +
      '(a step running at that moment is stopped). Its sessions stay, disconnected (`computerId` removed); work routed to it becomes unrouted.',
  })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiNotFoundResponse({ description: NOT_FOUND, schema: V0_ERROR })
  async remove(@CurrentPrincipal() principal: Principal, @Param('computerId') computerId: string): Promise<void> {
    await this.computers.remove(principal, computerId);
  }

  @Post(':computerId/retry')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Retry provisioning',
    description:
      'Not in the spec; added. A computer in `error` goes back to `provisioning`: its failed step is `pending` again (its `error` cleared), then the rest run.',
  })
  @ApiOkResponse({ schema: ref('Computer') })
  @ApiNotFoundResponse({ description: NOT_FOUND, schema: V0_ERROR })
  @ApiConflictResponse({ description: 'The computer is not in `error` (`computer_not_failed`, with `computerStatus`).', schema: V0_ERROR })
  @ApiErrorExamples(
    new ComputersError(ComputersErrorCode.NotFailed, `Computer ${EXAMPLE_ID} is active; only a computer in error can be retried.`, {
      computerStatus: 'active',
    }),
  )
  @ApiTooManyRequestsResponse({ description: `${PROVISIONING_QUOTA} The computer stays in \`error\`.`, schema: V0_ERROR })
  retry(@CurrentPrincipal() principal: Principal, @Param('computerId') computerId: string): Promise<ComputerView> {
    return this.computers.retry(principal, computerId);
  }

  @Post(':computerId/agent-token')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Rotate the agent token',
    description: 'Not in the spec; added. Issues a new agent token, shown this once; the old one stops working (on other instances within `AUTH_CACHE_MS`).',
  })
  @ApiOkResponse({ schema: ref('RotatedAgentToken') })
  @ApiNotFoundResponse({ description: NOT_FOUND, schema: V0_ERROR })
  rotateToken(@CurrentPrincipal() principal: Principal, @Param('computerId') computerId: string): Promise<RotatedAgentToken> {
    return this.computers.rotateAgentToken(principal, computerId);
  }
}

/** The computer's own agent, on the agent channel: where it reports the machine it runs on. */
@ApiTags('Agent channel')
@Controller('api/v0/agent')
@Authenticated(Role.Owner, Role.Manager, Role.Member)
@AcceptsComputerTokens()
export class AgentConnectController {
  constructor(private readonly computers: ComputersService) {}

  @Post('connect')
  @HttpCode(200)
  @ApiOperation({
    summary: "Connect a computer's agent",
    description:
      "Called by the agent at start with the computer's agent token (from `relayAgentUrl`): records the machine's `hostname`, shown in list and update responses. " +
      'API keys and JWTs answer 403 (`computer_credential_required`).',
  })
  @ApiBody({ schema: ref('ConnectAgentBody') })
  @ApiOkResponse({ schema: ref('Computer') })
  @ApiBadRequestResponse({ description: 'Invalid `hostname`.', schema: V0_ERROR })
  @ApiForbiddenResponse({ description: "Not a computer's agent token.", schema: V0_ERROR })
  connect(
    @CurrentPrincipal() principal: Principal,
    @Body(computerSchemas.pipe('ConnectAgentBody')) body: ApiSchema<'ConnectAgentBody'>,
  ): Promise<ComputerView> {
    return this.computers.connectAgent(principal, body);
  }
}

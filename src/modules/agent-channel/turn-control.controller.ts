import type { ApiSchema } from '../../platform/http/api-schema';
import { Body, Controller, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AcceptsComputerTokens, Authenticated, CurrentPrincipal, Principal, Role } from '../auth';
import { QuerySchema, ref } from '../../platform/http/json-schema';
import { ApiErrorExamples, ApiRequestExample, EXAMPLE_ID, V0_ERROR } from '../../platform/http/openapi';
import { ApiIdempotencyKey, IdempotencyKey, IdempotentRequest, respond } from '../../platform/idempotency';
import { ToolApprovalRequest, ToolApprovalRequests } from './tool-approval-requests.service';
import { ToolApprovalWaits } from './tool-approval-waits.service';
import { TurnControlService } from './turn-control.service';
import { PathIds } from '../../platform/http/path-ids';
import {
  AwaitToolApprovalQuery,
  SessionsError,
  SessionsErrorCode,
  SessionView,
  sessionNotFound,
  sessionSchemas,
  toolApprovalNotFound,
  turnNotActive,
} from '../sessions';
import { ToolApprovalView } from './tool-approval-view';

const WRITERS = [Role.Owner, Role.Manager, Role.Member];
const NOT_FOUND = "No such session in your organization, or one you may not read (another organization's included).";
const WRITE_FORBIDDEN = "A member acting on someone else's session (`read_only_role`); guests may not call this route at all.";
const SESSION_IDS = { sessionId: sessionNotFound, approvalId: (id: string, ids: Record<string, string>) => toolApprovalNotFound(ids.sessionId, id) };

/** A person in the loop of a session's turn: interrupt it, and answer its agent's requests for approval. */
@ApiTags('Sessions')
@Controller('api/v0/sessions')
@Authenticated()
@ApiBadRequestResponse({ description: 'Invalid input; `detail` names the field, `metadata.errors` lists all.', schema: V0_ERROR })
@PathIds(SESSION_IDS)
@ApiErrorExamples(sessionNotFound(EXAMPLE_ID))
export class TurnControlController {
  constructor(private readonly turns: TurnControlService) {}

  @Post(':sessionId/interrupt')
  @HttpCode(200)
  @Authenticated(...WRITERS)
  @ApiIdempotencyKey()
  @ApiOperation({
    summary: 'Interrupt the running turn',
    description:
      "Not in the spec. Stops the agent's running turn: the session shows `interruptedAt`, a `turn.interrupted` event names who did it, and " +
      'the tool approvals the turn waits for are cancelled. The agent learns it at its next heartbeat (it beats every second while it works), ' +
      'stops its model call and tools, appends what it has and ends the turn; the session then becomes `idle`, even when user messages ' +
      'arrived during the turn (they go to the next turn, when a new message starts one). An agent that does not end the turn within ' +
      '`AGENT_INTERRUPT_GRACE_MS` (default 15 s) has it ended for it, `idle` too. Interrupting a turn that is already interrupted answers ' +
      'the same and changes nothing; a session with no running turn is 409 `no_running_turn`. The body may be omitted.',
  })
  @ApiOkResponse({ schema: ref('Session') })
  @ApiForbiddenResponse({ description: WRITE_FORBIDDEN, schema: V0_ERROR })
  @ApiNotFoundResponse({ description: NOT_FOUND, schema: V0_ERROR })
  @ApiConflictResponse({ description: 'The session has no running turn (`no_running_turn`; `metadata.sessionStatus` says its status).', schema: V0_ERROR })
  @ApiErrorExamples(
    new SessionsError(SessionsErrorCode.NoRunningTurn, `Session ${EXAMPLE_ID} has no running turn to interrupt: it is idle.`, { sessionStatus: 'idle' }),
  )
  async interrupt(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @IdempotencyKey() idempotent: IdempotentRequest | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionView> {
    return respond(reply, await this.turns.interrupt(principal, sessionId, idempotent));
  }

  @Get(':sessionId/tool-approvals')
  @ApiOperation({
    summary: 'List tool calls waiting for approval',
    description:
      "Not in the spec. The tool calls of the session's running turn waiting for a person's decision (`pending`), oldest first; " +
      'anyone who may read the session may see them. One past its `expiresAt` is not listed: it is denied (`expired`).',
  })
  @ApiOkResponse({ schema: ref('ToolApprovalList') })
  @ApiNotFoundResponse({ description: NOT_FOUND, schema: V0_ERROR })
  async list(@CurrentPrincipal() principal: Principal, @Param('sessionId') sessionId: string): Promise<{ toolApprovals: ToolApprovalView[] }> {
    return { toolApprovals: await this.turns.pending(principal, sessionId) };
  }

  @Post(':sessionId/tool-approvals/:approvalId')
  @HttpCode(200)
  @Authenticated(...WRITERS)
  @ApiIdempotencyKey()
  @ApiOperation({
    summary: 'Allow or deny a tool call',
    description:
      'Not in the spec. A user who may write to the session answers a pending approval: `allow` and the agent runs the call; `deny` and it ' +
      "does not, the model getting the denial (with `message`, if given) as the call's result. A `tool_approval.resolved` event records who " +
      'decided. An approval that has its answer already, or timed out, is 409 `tool_approval_not_pending` (`metadata.status` says what it is).',
  })
  @ApiBody({ schema: ref('DecideToolApprovalBody') })
  @ApiOkResponse({ schema: ref('ToolApprovalResponse') })
  @ApiForbiddenResponse({ description: WRITE_FORBIDDEN, schema: V0_ERROR })
  @ApiNotFoundResponse({ description: `${NOT_FOUND} Or no such approval in the session (\`tool_approval_not_found\`).`, schema: V0_ERROR })
  @ApiConflictResponse({ description: 'The approval is not pending any more (`tool_approval_not_pending`).', schema: V0_ERROR })
  @ApiErrorExamples(
    toolApprovalNotFound(EXAMPLE_ID, EXAMPLE_ID),
    new SessionsError(SessionsErrorCode.ToolApprovalNotPending, `Tool approval ${EXAMPLE_ID} is allowed: it can no longer be decided.`, { status: 'allowed' }),
  )
  async decide(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @Param('approvalId') approvalId: string,
    @Body(sessionSchemas.pipe('DecideToolApprovalBody')) body: ApiSchema<'DecideToolApprovalBody'>,
    @IdempotencyKey() idempotent: IdempotentRequest | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ toolApproval: ToolApprovalView }> {
    return respond(reply, await this.turns.decide(principal, sessionId, approvalId, body, idempotent));
  }
}

const TURN_CONFLICT = 'The turn is over (`turn_not_active`), or a user interrupted it (`turn_interrupted`: stop, append what you have and end the turn).';

/** The agent channel's side of tool approvals: ask, then wait for the answer. */
@ApiTags('Agent channel')
@Controller('api/v0/agent')
@Authenticated(Role.Owner, Role.Manager, Role.Member)
@AcceptsComputerTokens()
@ApiBadRequestResponse({ description: 'Invalid input; `detail` names the field, `metadata.errors` lists all.', schema: V0_ERROR })
@PathIds(SESSION_IDS)
@ApiErrorExamples(sessionNotFound(EXAMPLE_ID), turnNotActive(EXAMPLE_ID, EXAMPLE_ID, 'idle'))
export class AgentToolApprovalsController {
  constructor(
    private readonly requests: ToolApprovalRequests,
    private readonly waits: ToolApprovalWaits,
  ) {}

  @Post('sessions/:sessionId/tool-approvals')
  @ApiIdempotencyKey()
  @ApiOperation({
    summary: 'Ask a person to approve a tool call',
    description:
      "Before running a call that the organization's or the session's `toolApproval` names, the agent holding the running turn asks here. " +
      "The approval is `pending` until a user of the session allows or denies it, or until `expiresAt` (the shorter of the organization's and the " +
      "session's `timeoutSeconds`, default 600 s), when it is denied (`expired`); ending the turn cancels it. A `tool_approval.requested` event " +
      "tells the session's watchers, and the session shows `pendingToolApprovals`. Keep heartbeating while waiting: the lease still runs.",
  })
  @ApiBody({ schema: ref('RequestToolApprovalBody') })
  @ApiRequestExample({
    turnId: EXAMPLE_ID,
    toolName: 'Execute',
    toolCallId: 'call_7',
    summary: 'git push origin main',
    input: { command: 'git push origin main' },
  })
  @ApiCreatedResponse({ schema: ref('ToolApprovalResponse') })
  @ApiNotFoundResponse({ description: 'No such session in your organization.', schema: V0_ERROR })
  @ApiConflictResponse({ description: TURN_CONFLICT, schema: V0_ERROR })
  async request(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @Body(sessionSchemas.pipe('RequestToolApprovalBody')) body: ToolApprovalRequest,
    @IdempotencyKey() idempotent: IdempotentRequest | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ toolApproval: ToolApprovalView }> {
    return respond(reply, await this.requests.request(principal, sessionId, body, idempotent));
  }

  @Get('sessions/:sessionId/tool-approvals/:approvalId')
  @ApiOperation({
    summary: 'Wait for the decision on a tool call',
    description:
      'The approval the turn asked for. With `waitMs`, a long poll: answers as soon as it is decided, expires or is cancelled, or after `waitMs` ' +
      'still `pending`. Run the call only when `status` is `allowed`; `denied`, `expired` and `cancelled` mean it must not run.',
  })
  @ApiOkResponse({ schema: ref('ToolApprovalResponse') })
  @ApiNotFoundResponse({
    description: 'No such session in your organization, or no such approval of this turn (`tool_approval_not_found`).',
    schema: V0_ERROR,
  })
  @ApiConflictResponse({ description: 'The turn is over while the approval was still pending (`turn_not_active`).', schema: V0_ERROR })
  @ApiErrorExamples(toolApprovalNotFound(EXAMPLE_ID, EXAMPLE_ID))
  @ApiTooManyRequestsResponse({
    description:
      'Too many long polls waiting (`too_many_long_polls`): a wait counts against the same caps as waiting claims (`LONG_POLLS_PER_COMPUTER`, `LONG_POLLS_PER_ORGANIZATION`).',
    schema: V0_ERROR,
  })
  async await(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @Param('approvalId') approvalId: string,
    @QuerySchema(sessionSchemas, 'AwaitToolApprovalQuery') query: AwaitToolApprovalQuery,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ toolApproval: ToolApprovalView }> {
    const abandoned = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableEnded) abandoned.abort();
    });
    return this.waits.await(principal, sessionId, approvalId, { turnId: query.turnId, waitMs: Number(query.waitMs ?? 0) }, abandoned.signal);
  }
}

import type { ApiSchema } from '../../platform/http/api-schema';
import { Body, Controller, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiForbiddenResponse,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AcceptsComputerTokens, Authenticated, CurrentPrincipal, Principal, Role } from '../auth';
import { DefaultBody, QuerySchema, ref } from '../../platform/http/json-schema';
import { ApiErrorExamples, ApiRequestExample, EXAMPLE_ID, V0_ERROR } from '../../platform/http/openapi';
import { pageOf, pageSize, Pagination } from '../../platform/http/pagination';
import { MessageSizedAnswer, MessageSizedBody, OwnRateLimit } from '../../platform/http/route-config';
import { ApiIdempotencyKey, IdempotencyKey, IdempotentRequest, respond } from '../../platform/idempotency';
import { AgentWorkService } from './agent-work.service';
import { TurnDeltas } from './turn-deltas.service';
import { WorkClaims } from './work-claims.service';
import { HeadlessSessions, StartedRun } from './headless-sessions.service';
import { PathIds } from '../../platform/http/path-ids';
import {
  MessageView,
  SessionsError,
  SessionsErrorCode,
  SessionView,
  SessionsService,
  TurnConversationQuery,
  sessionNotFound,
  sessionSchemas,
  turnNotActive,
} from '../sessions';

const sessionResponse = { type: 'object', required: ['session'], properties: { session: ref('Session') } };
const TURN_CONFLICT = 'The turn is over: it ended, or its lease ran out and another agent took the work (`turn_not_active`).';

/**
 * The agent channel (not in the spec): the endpoints an agent process uses to take waiting work
 * and answer it. Authenticated with a computer's agent token (work routed to that computer) or an
 * API key or JWT (members reach only their own sessions, guests none).
 */
@ApiTags('Agent channel')
@Controller('api/v0/agent')
@Authenticated(Role.Owner, Role.Manager, Role.Member)
@AcceptsComputerTokens()
@ApiBadRequestResponse({ description: 'Invalid input; `detail` names the field, `metadata.errors` lists all.', schema: V0_ERROR })
@PathIds({ sessionId: sessionNotFound })
@ApiErrorExamples(sessionNotFound(EXAMPLE_ID), turnNotActive(EXAMPLE_ID, EXAMPLE_ID, 'idle'))
export class AgentController {
  constructor(
    private readonly claims: WorkClaims,
    private readonly work: AgentWorkService,
    private readonly deltas: TurnDeltas,
    private readonly sessions: SessionsService,
    private readonly headless: HeadlessSessions,
  ) {}

  @Post('claims')
  @MessageSizedAnswer()
  @ApiIdempotencyKey()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Take the next waiting work',
    description:
      "Takes the session that has waited longest (`pending`), routed to `computerId` or, without it, unrouted; with a computer's agent token, " +
      "its computer's work only (another `computerId` is 404). A turn whose lease ran out " +
      'comes first, restarted with the same messages. The session becomes `running` under a new `turnId` leased for `AGENT_LEASE_MS` ' +
      '(default 5 minutes); every call of the turn renews the lease. Two agents asking at once never get the same work. With `waitMs`, ' +
      'waits up to that long (at most 30 s) for work to arrive; `work` is null when none did. Waiting claims are capped per computer ' +
      '(`LONG_POLLS_PER_COMPUTER`, default 10) and per organization (`LONG_POLLS_PER_ORGANIZATION`, default 200) on each server instance: ' +
      'more answer 429 `too_many_long_polls` with `Retry-After`; a claim that finds work at once, or does not wait, is not counted. Over a cap, a waiting ' +
      'claim for work that claims already wait for on the instance is refused before it looks (those claims take whatever arrives). The body may be omitted.',
  })
  @ApiBody({ schema: ref('ClaimWorkBody'), required: false })
  @ApiRequestExample({ waitMs: 1000 })
  @ApiOkResponse({ schema: ref('ClaimWorkResponse') })
  @ApiNotFoundResponse({ description: 'Unknown `computerId`.', schema: V0_ERROR })
  @ApiForbiddenResponse({
    description:
      "`computer_work_disabled`: the organization's controls keep the computer from new work: its kind is turned off (`managedComputersEnabled`, " +
      "`byomComputersEnabled`) or its owner is not on the kind's email list (`metadata.control` names which). A running turn finishes.",
    schema: V0_ERROR,
  })
  @ApiErrorExamples(
    new SessionsError(SessionsErrorCode.ComputerNotFound, `No computer ${EXAMPLE_ID} exists in your organization.`),
    new SessionsError(
      SessionsErrorCode.ComputerWorkDisabled,
      `Computer ${EXAMPLE_ID} takes no new work: BYOM computers are turned off for your organization. A turn already running finishes.`,
      { control: 'byomComputersEnabled', computerId: EXAMPLE_ID },
    ),
  )
  @ApiTooManyRequestsResponse({
    description: 'Too many claims waiting (`too_many_long_polls`; `metadata.limit` names the cap, `metadata.max` its value).',
    schema: V0_ERROR,
  })
  async claim(
    @CurrentPrincipal() principal: Principal,
    @Body(new DefaultBody({}), sessionSchemas.pipe('ClaimWorkBody')) body: ApiSchema<'ClaimWorkBody'>,
    @IdempotencyKey() idempotent: IdempotentRequest | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ApiSchema<'ClaimWorkResponse'>> {
    const abandoned = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableEnded) abandoned.abort();
    });
    return respond(reply, await this.claims.claim(principal, body, idempotent, abandoned.signal));
  }

  @Post('sessions')
  @ApiIdempotencyKey()
  @ApiOperation({
    summary: 'Start a session of an agent run (added)',
    description:
      "How an agent records a run it starts on its own computer (the reference agent's `exec`): a session of the computer's owner, routed to the computer, " +
      'with `text` as its first message, and its turn taken by the caller at once, in one transaction, so no other agent of the computer can take it: ' +
      "`work` is what a claim would answer. Only a computer's agent token may call it (403 `agent_token_required`); while the organization's " +
      '`cloudSessionSync` is off it is 403 `cloud_session_sync_off`, and the agent runs without recording. The session settings are checked as on ' +
      '`POST /api/v0/sessions` (403 naming the model rule).',
  })
  @ApiBody({ schema: ref('AgentSessionBody') })
  @ApiCreatedResponse({ schema: ref('AgentRunStarted') })
  @ApiForbiddenResponse({
    description: '`agent_token_required`, `cloud_session_sync_off`, `computer_work_disabled`, or a model the policy refuses.',
    schema: V0_ERROR,
  })
  async startSession(
    @CurrentPrincipal() principal: Principal,
    @Body(sessionSchemas.pipe('AgentSessionBody')) body: ApiSchema<'AgentSessionBody'>,
    @IdempotencyKey() idempotent: IdempotentRequest | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<StartedRun> {
    return respond(reply, await this.headless.start(principal, body, idempotent));
  }

  @Post('sessions/existing')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Which sessions still exist',
    description:
      'Of the ids given (at most 100), those that name a session the caller may read, in the order given. An agent asks it to clean up what it keeps per ' +
      'session (the reference agent: the git worktrees of `runInWorktree`) once sessions are deleted.',
  })
  @ApiBody({ schema: ref('ExistingSessionsBody') })
  @ApiOkResponse({ schema: ref('ExistingSessions') })
  async existing(
    @CurrentPrincipal() principal: Principal,
    @Body(sessionSchemas.pipe('ExistingSessionsBody')) body: ApiSchema<'ExistingSessionsBody'>,
  ): Promise<{ existing: string[] }> {
    return { existing: await this.sessions.existing(principal, body.sessionIds) };
  }

  @Get('sessions/:sessionId/messages')
  @MessageSizedAnswer()
  @ApiOperation({
    summary: 'Read the conversation of a turn',
    description:
      'The messages of the session, oldest first, paged like the session messages list (at most `limit` and `MESSAGE_PAGE_MAX_BYTES` a page), for the agent holding its running turn `turnId`: ' +
      "how an agent that restarted, or took the session over, picks the conversation up. Where the organization's `messageHistory` feature " +
      "is off, only the turn's own messages may be read (from the claim's `messagesCursor` on); earlier pages are 403 `message_history_disabled`. " +
      'A turn that is over is 409 `turn_not_active`.',
  })
  @ApiOkResponse({ schema: pageOf('messages', 'Message') })
  @ApiForbiddenResponse({
    description: 'Message history is off for the organization and the page starts before the turn (`message_history_disabled`).',
    schema: V0_ERROR,
  })
  @ApiNotFoundResponse({ description: 'No such session in your organization (or not one this computer works on).', schema: V0_ERROR })
  @ApiConflictResponse({ description: TURN_CONFLICT, schema: V0_ERROR })
  async conversation(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @QuerySchema(sessionSchemas, 'TurnConversationQuery') query: TurnConversationQuery,
  ): Promise<{ messages: MessageView[]; pagination: Pagination }> {
    const result = await this.work.conversation(principal, sessionId, { turnId: query.turnId, cursor: query.cursor, limit: pageSize(query) });
    return { messages: result.items, pagination: result.pagination };
  }

  @Post('sessions/:sessionId/messages')
  @MessageSizedBody()
  @ApiIdempotencyKey()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Append agent messages',
    description:
      'Appends assistant, tool and system messages in the given order. Ids and times are assigned by the server; a message without ' +
      '`parentId` follows the one before it (the previous message of the session for the first), and a given `parentId` must be a ' +
      'message of the session.',
  })
  @ApiBody({ schema: ref('AppendMessagesBody') })
  @ApiRequestExample({
    turnId: EXAMPLE_ID,
    messages: [{ role: 'assistant', content: [{ type: 'text', text: 'Added GET /healthz and its test; the suite passes.' }] }],
  })
  @ApiOkResponse({ schema: { type: 'object', required: ['messages'], properties: { messages: { type: 'array', items: ref('Message') } } } })
  @ApiNotFoundResponse({ description: 'No such session in your organization.', schema: V0_ERROR })
  @ApiConflictResponse({ description: TURN_CONFLICT, schema: V0_ERROR })
  async append(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @Body(sessionSchemas.pipe('AppendMessagesBody')) body: ApiSchema<'AppendMessagesBody'>,
    @IdempotencyKey() idempotent: IdempotentRequest | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ messages: MessageView[] }> {
    return respond(reply, await this.work.appendMessages(principal, sessionId, body, idempotent));
  }

  @Post('sessions/:sessionId/usage')
  @ApiIdempotencyKey()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Report token usage',
    description:
      "Adds the tokens one model used to the session's `sessionSettings.tokenUsage` and to the organization's daily totals per user " +
      "(the session's owner) and model, which analytics reads. Omitted counts are 0.",
  })
  @ApiBody({ schema: ref('ReportUsageBody') })
  @ApiOkResponse({ schema: sessionResponse })
  @ApiNotFoundResponse({ description: 'No such session in your organization.', schema: V0_ERROR })
  @ApiConflictResponse({ description: TURN_CONFLICT, schema: V0_ERROR })
  async usage(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @Body(sessionSchemas.pipe('ReportUsageBody')) body: ApiSchema<'ReportUsageBody'>,
    @IdempotencyKey() idempotent: IdempotentRequest | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ session: SessionView }> {
    return respond(reply, await this.work.reportUsage(principal, sessionId, body, idempotent));
  }

  @Post('sessions/:sessionId/heartbeat')
  @ApiIdempotencyKey()
  @HttpCode(200)
  @ApiOperation({
    summary: "Renew the turn's lease, and learn whether it was interrupted",
    description:
      'For long steps without other calls, and how an agent learns that a user interrupted its turn (`interrupted: true`): ' +
      'beat about every second while working, so an interrupt is seen within 2 s. An interrupted turn may still append messages, ' +
      'report usage and end; its lease is no longer renewed, and past `AGENT_INTERRUPT_GRACE_MS` the server ends the turn, `idle`.',
  })
  @ApiBody({ schema: ref('TurnBody') })
  @ApiOkResponse({ schema: ref('HeartbeatResponse') })
  @ApiNotFoundResponse({ description: 'No such session in your organization.', schema: V0_ERROR })
  @ApiConflictResponse({ description: TURN_CONFLICT, schema: V0_ERROR })
  async heartbeat(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @Body(sessionSchemas.pipe('TurnBody')) body: ApiSchema<'TurnBody'>,
    @IdempotencyKey() idempotent: IdempotentRequest | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ leaseExpiresAt: number; interrupted: boolean }> {
    return respond(reply, await this.work.heartbeat(principal, sessionId, body, idempotent));
  }

  @Post('sessions/:sessionId/deltas')
  @OwnRateLimit()
  @HttpCode(202)
  @ApiOperation({
    summary: 'Stream a piece of what the model is writing or a tool is printing',
    description:
      "Sends `text` at once to the session's open event streams as a `message.delta` event (`MessageDeltaEvent`; not in the spec), on every server instance. " +
      "`kind` says what it is a piece of: `text` (the default, as agents that send no `kind` mean), the answer; `thinking`, the model's reasoning; " +
      "`tool_input`, a tool call's arguments as the model writes them; `tool_output`, a running tool's output. The tool kinds need `toolUseId` and " +
      '`toolName` and the others refuse them (400 `validation_failed` naming the field). ' +
      'Nothing is stored: no `seq`, no webhook, no analytics, and a stream opened later never gets it; the messages the agent appends afterwards (the ' +
      'answer with its thinking and tool calls, then the tool results) are whole and final. Streams send every kind only to those who may read the ' +
      "session's messages (the `messageHistory` feature, as for `message.added`'s `message`): exactly those who may read its stored thinking and tool " +
      'results. Best effort: an agent sends these coalesced (every 100 ms or 2 KB, per step, kind and tool call), never retries ' +
      'them, and goes on with its turn when one fails. `text` is 1 to 16,384 characters whatever the kind. ' +
      'It does not spend the rate limits of the credential and the organization (so streaming never starves appends): deltas have their own, ' +
      '50 a second per credential on each server instance, past which 429 `too_many_deltas` with `Retry-After: 1`. A turn that is over is 409 `turn_not_active`.',
  })
  @ApiBody({ schema: ref('MessageDeltaBody') })
  @ApiAcceptedResponse({ description: 'Sent to the streams open now.' })
  @ApiNotFoundResponse({ description: 'No such session in your organization.', schema: V0_ERROR })
  @ApiConflictResponse({ description: TURN_CONFLICT, schema: V0_ERROR })
  @ApiTooManyRequestsResponse({ description: 'More than 50 deltas a second from this credential (`too_many_deltas`, `Retry-After: 1`).', schema: V0_ERROR })
  async delta(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @Body(sessionSchemas.pipe('MessageDeltaBody')) body: ApiSchema<'MessageDeltaBody'>,
  ): Promise<void> {
    await this.deltas.publish(principal, sessionId, body);
  }

  @Post('sessions/:sessionId/end-turn')
  @ApiIdempotencyKey()
  @HttpCode(200)
  @ApiOperation({
    summary: 'End the turn',
    description:
      'The session becomes `idle` (and `completedAt` is set), or `pending` again when user messages arrived during the turn ' +
      '(an interrupted turn ends `idle` regardless). Tool approvals the turn still waits for are cancelled. ' +
      "`assistantActiveTimeMs` is added to the session's total.",
  })
  @ApiBody({ schema: ref('EndTurnBody') })
  @ApiRequestExample({ turnId: EXAMPLE_ID, assistantActiveTimeMs: 5400 })
  @ApiOkResponse({ schema: sessionResponse })
  @ApiNotFoundResponse({ description: 'No such session in your organization.', schema: V0_ERROR })
  @ApiConflictResponse({ description: TURN_CONFLICT, schema: V0_ERROR })
  async endTurn(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @Body(sessionSchemas.pipe('EndTurnBody')) body: ApiSchema<'EndTurnBody'>,
    @IdempotencyKey() idempotent: IdempotentRequest | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ session: SessionView }> {
    return respond(reply, await this.work.endTurn(principal, sessionId, body, idempotent));
  }
}

import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Res } from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiBadRequestResponse,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Authenticated, CurrentPrincipal, Principal, Role } from '../auth';
import { DefaultBody, QuerySchema, ref } from '../../platform/http/json-schema';
import { ApiErrorExamples, ApiRequestExample, EXAMPLE_ID, V0_ERROR } from '../../platform/http/openapi';
import { pageOf, pageSize, Pagination } from '../../platform/http/pagination';
import { MessageSizedAnswer, MessageSizedBody } from '../../platform/http/route-config';
import { noEffectWarnings } from '../../platform/http/no-effect';
import { NO_EFFECT_SESSION_SETTINGS } from './domain/session-settings';
import { ApiIdempotencyKey, IdempotencyKey, IdempotentRequest, respond } from '../../platform/idempotency';
import { MessageRole } from './domain/message';
import { MessageView, SessionView } from './domain/views';
import { GetSessionQuery, ListMessagesQuery, ListSessionsQuery } from './schemas/session-queries';
import { sessionSchemas } from './schemas/session.schemas';
import { AddMessageInput, AddMessageResult, SessionMessages } from './session-messages.service';
import { CreateSessionInput, SessionsService, UpdateSessionInput } from './sessions.service';
import { PathIds } from '../../platform/http/path-ids';
import { messageHistoryDisabled, sessionArchived, sessionNotFound } from './domain/sessions.errors';

const WRITERS = [Role.Owner, Role.Manager, Role.Member];

/** Sets `Idempotent-Replayed` on a replayed answer and returns the body. */
/** The session, with `warnings` for the settings given that have no effect here. */
function withWarnings(session: SessionView, given: object | undefined): SessionView {
  const warnings = noEffectWarnings(given, NO_EFFECT_SESSION_SETTINGS, 'sessionSettings.');
  return warnings.length > 0 ? { ...session, warnings } : session;
}

@ApiTags('Sessions')
@Controller('api/v0/sessions')
@Authenticated()
@ApiBadRequestResponse({ description: 'Invalid input; `detail` names the field, `metadata.errors` lists all.', schema: V0_ERROR })
@ApiNotFoundResponse({
  description: "No such session in your organization, or one you may not read (another organization's included); or an unknown `computerId`.",
  schema: V0_ERROR,
})
@PathIds({ sessionId: sessionNotFound })
@ApiErrorExamples(sessionNotFound(EXAMPLE_ID))
export class SessionsController {
  constructor(
    private readonly sessions: SessionsService,
    private readonly messages: SessionMessages,
  ) {}

  @Post()
  @Authenticated(...WRITERS)
  @ApiIdempotencyKey()
  @ApiOperation({
    summary: 'Create a session',
    description:
      'Not in the spec; added so clients can start work. The session starts `idle` with no messages and belongs to the caller. ' +
      "Its id is a UUIDv7: time-ordered and unguessable. `sessionSettings` are laid over the organization's session defaults. Every field is optional: the body may be omitted.",
  })
  @ApiBody({ schema: ref('CreateSessionBody'), required: false })
  @ApiRequestExample({ title: 'Add a health check to the orders API', sessionSettings: { model: 'model-a', reasoningEffort: 'medium' } })
  @ApiCreatedResponse({ schema: ref('Session') })
  @ApiUnprocessableEntityResponse({ description: 'The Idempotency-Key was used with another request.', schema: V0_ERROR })
  async create(
    @CurrentPrincipal() principal: Principal,
    @Body(new DefaultBody({}), sessionSchemas.pipe('CreateSessionBody')) body: CreateSessionInput,
    @IdempotencyKey() idempotent: IdempotentRequest | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionView> {
    return withWarnings(respond(reply, await this.sessions.create(principal, body, idempotent)), body.sessionSettings);
  }

  @Get()
  @ApiOperation({
    summary: 'List sessions',
    description:
      'Newest first (by `createdAt`, then `sessionId`, both descending). Owners and managers see every session of the organization; ' +
      'members see them all unless `restrictMemberVisibility` is on, then only their own; guests see their own. ' +
      'Archived sessions (`sessionSettings.archivedAt` set) are left out unless `archived` asks for them.',
  })
  @ApiOkResponse({ schema: pageOf('sessions', 'Session') })
  async list(
    @CurrentPrincipal() principal: Principal,
    @QuerySchema(sessionSchemas, 'ListSessionsQuery') query: ListSessionsQuery,
  ): Promise<{ sessions: SessionView[]; pagination: Pagination }> {
    const result = await this.sessions.list(principal, {
      cursor: query.cursor,
      limit: pageSize(query),
      computerId: query.computerId,
      archived: query.archived,
      tag: query.tag,
    });
    return { sessions: result.items, pagination: result.pagination };
  }

  @Get(':sessionId')
  @ApiOperation({ summary: 'Get a session' })
  @ApiOkResponse({ schema: ref('Session') })
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @QuerySchema(sessionSchemas, 'GetSessionQuery') query: GetSessionQuery,
  ): Promise<SessionView> {
    return this.sessions.get(principal, sessionId, query.computerId);
  }

  @Patch(':sessionId')
  @Authenticated(...WRITERS)
  @ApiOperation({
    summary: 'Update a session',
    description:
      'Not in the spec; added. Changes the title and settings (archive with `sessionSettings.archivedAt`). Given settings replace those fields; others stay.',
  })
  @ApiBody({ schema: ref('UpdateSessionBody') })
  @ApiRequestExample({ title: 'Add /healthz to the orders API' })
  @ApiOkResponse({ schema: ref('Session') })
  @ApiForbiddenResponse({ description: "A member changing someone else's session, or a guest.", schema: V0_ERROR })
  async update(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @Body(sessionSchemas.pipe('UpdateSessionBody')) body: UpdateSessionInput,
  ): Promise<SessionView> {
    return withWarnings(await this.sessions.update(principal, sessionId, body), body.sessionSettings);
  }

  @Delete(':sessionId')
  @HttpCode(204)
  @Authenticated(...WRITERS)
  @ApiOperation({ summary: 'Delete a session', description: 'Not in the spec; added. Deletes the session and all its messages, for good.' })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiForbiddenResponse({ description: "A member deleting someone else's session, or a guest.", schema: V0_ERROR })
  async remove(@CurrentPrincipal() principal: Principal, @Param('sessionId') sessionId: string): Promise<void> {
    await this.sessions.remove(principal, sessionId);
  }

  @Get(':sessionId/messages')
  @MessageSizedAnswer()
  @ApiOperation({
    summary: 'List session messages',
    description:
      'In conversation order, oldest first; `order=newest` (not in the spec) answers newest first, to show the latest and page back. Enabled for selected organizations only: elsewhere every call answers 403 ' +
      '(`message_history_disabled`), checked before the session. `role` keeps only messages of that role. ' +
      'A page holds at most `limit` messages and at most `MESSAGE_PAGE_MAX_BYTES` (default 16 MiB) of them: it stops before the message ' +
      'that would pass the budget (`hasMore: true`, and `nextCursor` continues at that message), though a larger message still comes, alone.',
  })
  @ApiOkResponse({ schema: pageOf('messages', 'Message') })
  @ApiForbiddenResponse({ description: 'Message history is not enabled for your organization.', schema: V0_ERROR })
  @ApiErrorExamples(messageHistoryDisabled())
  async listMessages(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @QuerySchema(sessionSchemas, 'ListMessagesQuery') query: ListMessagesQuery,
  ): Promise<{ messages: MessageView[]; pagination: Pagination }> {
    const result = await this.messages.list(principal, sessionId, {
      cursor: query.cursor,
      limit: pageSize(query),
      computerId: query.computerId,
      role: query.role as MessageRole | undefined,
      newestFirst: query.order === 'newest',
    });
    return { messages: result.items, pagination: result.pagination };
  }

  @Post(':sessionId/messages')
  @MessageSizedBody()
  @HttpCode(200)
  @Authenticated(...WRITERS)
  @ApiIdempotencyKey()
  @ApiOperation({
    summary: 'Add a user message',
    description:
      'Stores the text, then the images, then the files as the content blocks of one user message (`userMessageSource: sessions_api`), ' +
      'its `parentId` the previous message. An `idle` session becomes `pending` (work waiting for an agent); a `running` one stays running, ' +
      "and goes back to `pending` when the agent ends its turn. `status` is the session's status after submission. " +
      "Base64 must be valid and its bytes must match `mediaType`. The work is routed to `computerId`, else to the session's computer. " +
      'When no agent will take it (none asked for work in its queue in the last 90 s), the message is stored and `warnings` says so. ' +
      'An archived session (`sessionSettings.archivedAt` set) takes none: 409 `session_archived`.',
  })
  @ApiBody({ schema: ref('AddMessageBody') })
  @ApiRequestExample({ text: 'Add GET /healthz answering 200 while the database answers, with a test.' })
  @ApiOkResponse({ schema: ref('AddMessageResponse') })
  @ApiForbiddenResponse({ description: "A member writing to someone else's session, or a guest.", schema: V0_ERROR })
  @ApiConflictResponse({
    description: '`session_archived`: the session is archived (`metadata.archivedAt`); unarchive it by setting `archivedAt` to null.',
    schema: V0_ERROR,
  })
  @ApiErrorExamples(sessionArchived(EXAMPLE_ID, '2026-11-29T08:00:00.000Z'))
  @ApiUnprocessableEntityResponse({ description: 'The Idempotency-Key was used with another request.', schema: V0_ERROR })
  async addMessage(
    @CurrentPrincipal() principal: Principal,
    @Param('sessionId') sessionId: string,
    @Body(sessionSchemas.pipe('AddMessageBody')) body: AddMessageInput,
    @IdempotencyKey() idempotent: IdempotentRequest | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<AddMessageResult> {
    return respond(reply, await this.messages.add(principal, sessionId, body, idempotent));
  }
}

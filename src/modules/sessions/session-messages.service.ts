import type { ApiSchema } from '../../platform/http/api-schema';
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { eventActorOf, Principal, Role } from '../auth';
import { isUuid, newId } from '../../platform/database/ids';
import { IdempotencyService, IdempotentRequest, IdempotentResult } from '../../platform/idempotency';
import { Page } from '../../platform/http/pagination';
import { validationError } from '../../platform/http/validation';
import { SessionEntity } from './entities';
import { checkBase64Payload } from './domain/attachments';
import { ContentBlock, MessageRole } from './domain/message';
import { assertTransition, SessionStatus, SessionTrigger } from './domain/session-status';
import { messageHistoryDisabled, sessionArchived, sessionNotFound } from './domain/sessions.errors';
import { isArchived } from './domain/session-settings';
import { MessageView, StatusReason, toMessageView } from './domain/views';
import { AgentAvailability } from './contracts/agent-availability';
import { SessionPolicy } from './session-policy';
import { SessionAccess } from './session-access.service';
import { SessionChange } from './session-rows';
import { SessionsRepository } from './sessions.repository';

export type AddMessageInput = ApiSchema<'AddMessageBody'>;

export interface AddMessageResult {
  messageId: string;
  status: SessionStatus;
  /** Not in the spec: what will keep the message from being answered (no agent will take the session). */
  warnings?: StatusReason[];
}

/** Where add-message records a user message as coming from. */
export const API_MESSAGE_SOURCE = 'sessions_api';

/** The public v0 sessions API's messages: a person adds one (the session's next turn), and reads the history. */
@Injectable()
export class SessionMessages {
  constructor(
    private readonly repository: SessionsRepository,
    private readonly access: SessionAccess,
    private readonly policy: SessionPolicy,
    private readonly idempotency: IdempotencyService,
    private readonly agents: AgentAvailability,
    private readonly config: AppConfig,
  ) {}

  /**
   * Stores a user message (text, then images, then files, as content blocks) and moves the
   * session to pending, or keeps it running when an agent is at work.
   */
  async add(principal: Principal, sessionId: string, input: AddMessageInput, idempotent?: IdempotentRequest): Promise<IdempotentResult<AddMessageResult>> {
    const content = userContent(input);
    if (!isUuid(sessionId)) throw sessionNotFound(sessionId);
    if (input.computerId !== undefined) await this.access.requireComputer(principal, input.computerId);
    // Owners and managers may write to any session of the organization, members to their own: the statement
    // says which (no read before it), unless the session's models must be checked first.
    const restrictsModels = await this.policy.restrictsModels(principal);
    const member = principal.role === Role.Member;
    if (restrictsModels) {
      const session = await this.access.readable(principal, sessionId);
      if (member) this.access.writable(principal, session);
      // A model blocked since the session chose it takes no more turns.
      await this.policy.requireModels(principal, session.settings);
    }
    // Decided before the statement: inside its transaction (an idempotency key's), a read on PGlite would wait for it.
    const canRead = member ? await this.access.readCheck(principal) : null;
    // Which agents are there, asked before the message is added: after it, the query would delay the agent woken for it.
    const reasonNow = await this.agents.reasonsNow(principal.organizationId);
    const messageId = newId();
    let published: SessionChange | undefined;
    const add = async (manager: EntityManager) => {
      const change = await this.repository.addUserMessage(
        {
          sessionId,
          organizationId: principal.organizationId,
          ...(member ? { ownerId: principal.userId } : {}),
          messageId,
          computerId: input.computerId ?? null,
          authorId: principal.userId,
          source: API_MESSAGE_SOURCE,
          content,
          actor: eventActorOf(principal),
        },
        manager,
      );
      if (!change) return this.refuseMessage(principal, sessionId, manager, canRead);
      assertTransition(SessionTrigger.UserMessageAdded, change.previousStatus, change.session.status);
      published = change;
      return { messageId, status: change.session.status };
    };
    // One statement: with no idempotency key, no transaction either.
    const result = await this.idempotency.run(principal, idempotent, add, 200, { oneStatement: true });
    // Said on every answer, a replayed one too: whether an agent will take the work is about now.
    const reasonFor = (session: SessionEntity | null) => (session ? reasonNow(session) : null);
    const reason = published
      ? reasonFor(published.session)
      : result.body.status === SessionStatus.Pending
        ? reasonFor(await this.repository.findSession(sessionId, principal.organizationId))
        : null;
    return reason ? { ...result, body: { ...result.body, warnings: [reason] } } : result;
  }

  /**
   * Throws why a session took no message, in the order a reader meets them: unknown or not visible to a member (404),
   * another's session for a member (403), archived (409). Owners and managers may write to every session.
   */
  private async refuseMessage(
    principal: Principal,
    sessionId: string,
    manager: EntityManager,
    canRead: ((session: SessionEntity) => boolean) | null,
  ): Promise<never> {
    const session = await this.repository.findSession(sessionId, principal.organizationId, manager);
    if (!session || (canRead && !canRead(session))) throw sessionNotFound(sessionId);
    if (canRead) this.access.writable(principal, session);
    throw isArchived(session.settings) ? sessionArchived(sessionId, session.settings.archivedAt as string) : sessionNotFound(sessionId);
  }

  async list(
    principal: Principal,
    sessionId: string,
    query: { cursor?: string; limit: number; computerId?: string; role?: MessageRole; newestFirst?: boolean },
  ): Promise<Page<MessageView>> {
    if (principal.features.messageHistory !== true) {
      throw messageHistoryDisabled();
    }
    if (query.computerId !== undefined) await this.access.requireComputer(principal, query.computerId);
    const found = isUuid(sessionId)
      ? await this.repository.listMessages(sessionId, principal.organizationId, { ...query, maxBytes: this.config.MESSAGE_PAGE_MAX_BYTES })
      : null;
    if (!found || (query.computerId !== undefined && found.session.computerId !== query.computerId)) throw sessionNotFound(sessionId);
    await this.access.readableEntity(principal, found.session, sessionId);
    return { items: found.page.items.map(toMessageView), pagination: found.page.pagination };
  }
}

/** The user message's content blocks, after checking what the schema cannot: blank text, base64, media types. */
export function userContent(input: AddMessageInput): ContentBlock[] {
  const errors = [];
  if (input.text.trim().length === 0) errors.push({ field: 'text', message: 'must contain a non-blank character' });
  (input.images ?? []).forEach((image, i) => {
    const error = checkBase64Payload(`images[${i}]`, image.data, image.mediaType);
    if (error) errors.push(error);
  });
  (input.files ?? []).forEach((file, i) => {
    if (file.type === 'base64') {
      const error = checkBase64Payload(`files[${i}]`, file.data, file.mediaType);
      if (error) errors.push(error);
    } else if (file.data.length === 0) {
      errors.push({ field: `files[${i}].data`, message: 'must not be empty' });
    }
  });
  if (errors.length > 0) throw validationError(errors);
  return [
    { type: 'text', text: input.text },
    ...(input.images ?? []).map((source) => ({ type: 'image' as const, source })),
    ...(input.files ?? []).map((source) => ({ type: 'document' as const, source })),
  ];
}

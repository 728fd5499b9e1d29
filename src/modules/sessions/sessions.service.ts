import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { AccessPolicy, eventActorOf, OrganizationControlsReader, Principal, Role } from '../auth';
import { EventLog } from '../../platform/events';
import { isUuid, newId } from '../../platform/database/ids';
import { IdempotencyService, IdempotentRequest, IdempotentResult } from '../../platform/idempotency';
import { Page } from '../../platform/http/pagination';
import { validationError } from '../../platform/http/validation';
import { SessionEntity } from './entities';
import { checkBase64Payload } from './domain/attachments';
import { ContentBlock, MessageRole } from './domain/message';
import { SERVER_MAINTAINED_SETTINGS, StoredSessionSettings } from './domain/session-settings';
import { assertTransition, SessionStatus, SessionTrigger } from './domain/session-status';
import { SessionsError, SessionsErrorCode } from './domain/sessions.errors';
import { MessageView, SessionView, StatusReason, toMessageView, toSessionView } from './domain/views';
import { AgentPresence } from './agent-presence';
import { ComputerDirectory } from './ports/computer-directory';
import { SessionPolicy } from './ports/session-policy';
import { SessionChange, SessionsRepository } from './sessions.repository';

export interface CreateSessionInput {
  title?: string;
  computerId?: string;
  sessionSettings?: StoredSessionSettings;
}

export interface UpdateSessionInput {
  title?: string | null;
  sessionSettings?: StoredSessionSettings;
}

export interface AddMessageInput {
  text: string;
  images?: Array<{ type: 'base64'; data: string; mediaType: string }>;
  files?: Array<Record<string, unknown> & { type: string; mediaType: string; data: string }>;
  computerId?: string;
}

export interface AddMessageResult {
  messageId: string;
  status: SessionStatus;
  /** Not in the spec: what will keep the message from being answered (no agent will take the session). */
  warnings?: StatusReason[];
}

/** Where add-message records a user message as coming from. */
export const API_MESSAGE_SOURCE = 'sessions_api';

/** The public v0 sessions API: sessions and their user messages, under the role matrix. */
@Injectable()
export class SessionsService {
  constructor(
    private readonly repository: SessionsRepository,
    private readonly controls: OrganizationControlsReader,
    private readonly computers: ComputerDirectory,
    private readonly policy: SessionPolicy,
    private readonly idempotency: IdempotencyService,
    private readonly events: EventLog,
    private readonly config: AppConfig,
    private readonly presence: AgentPresence,
  ) {}

  async create(principal: Principal, input: CreateSessionInput, idempotent?: IdempotentRequest): Promise<IdempotentResult<SessionView>> {
    if (input.computerId !== undefined) await this.requireComputer(principal, input.computerId);
    const defaults = await this.policy.defaults(principal.organizationId);
    const settings: StoredSessionSettings = { ...withoutServerMaintained(defaults), ...input.sessionSettings };
    await this.policy.requireModels(principal, settings);
    const now = new Date();
    const session = Object.assign(new SessionEntity(), {
      id: newId(),
      organizationId: principal.organizationId,
      ownerId: principal.userId,
      computerId: input.computerId ?? null,
      title: input.title ?? null,
      status: SessionStatus.Idle,
      messageCount: 0,
      lastMessageId: null,
      lastUserSeq: 0,
      claimedSeq: 0,
      workComputerId: null,
      pendingSince: null,
      turnBaseSeq: 0,
      turnId: null,
      turnComputerId: null,
      leaseExpiresAt: null,
      settings,
      createdAt: now,
      updatedAt: now,
      completedAt: null,
    });
    return this.idempotency.run(principal, idempotent, async (manager) => {
      await this.repository.insertSession(manager, session);
      this.events.raise(manager, {
        type: 'session.created',
        organizationId: session.organizationId,
        sessionId: session.id,
        actor: eventActorOf(principal),
        data: { sessionId: session.id, ownerId: session.ownerId, computerId: session.computerId, title: session.title },
      });
      return toSessionView(session);
    }, 201);
  }

  async get(principal: Principal, sessionId: string, computerId?: string): Promise<SessionView> {
    const session = await this.readable(principal, sessionId, computerId);
    return toSessionView(session, await this.statusReason(principal.organizationId, session));
  }

  async list(principal: Principal, query: { cursor?: string; limit: number; computerId?: string }): Promise<Page<SessionView>> {
    if (query.computerId !== undefined) await this.requireComputer(principal, query.computerId);
    const ownerId = (await this.seesOnlyOwnSessions(principal)) ? principal.userId : undefined;
    const page = await this.repository.listSessions(
      { organizationId: principal.organizationId, ownerId, computerId: query.computerId },
      query.cursor,
      query.limit,
    );
    const live = page.items.some((s) => s.status === SessionStatus.Pending) ? await this.presence.liveQueues(principal.organizationId) : [];
    return { items: page.items.map((s) => toSessionView(s, AgentPresence.reason(live, s))), pagination: page.pagination };
  }

  /** Why no agent will take the session (only a pending one can be in that state), or null. */
  private async statusReason(organizationId: string, session: Pick<SessionEntity, 'status' | 'workComputerId' | 'ownerId'>): Promise<StatusReason | null> {
    if (session.status !== SessionStatus.Pending) return null;
    return AgentPresence.reason(await this.presence.liveQueues(organizationId), session);
  }

  async update(principal: Principal, sessionId: string, input: UpdateSessionInput): Promise<SessionView> {
    if (!isUuid(sessionId)) notFound(sessionId);
    // Read before the transaction: on PGlite's one connection, a read outside it would wait for it.
    const { restrictMemberVisibility } = await this.controls.read(principal.organizationId);
    if (input.sessionSettings) await this.policy.requireModels(principal, input.sessionSettings);
    return this.repository.transaction(async (manager) => {
      const locked = await this.repository.findSession(sessionId, principal.organizationId, manager, true);
      if (!locked || !AccessPolicy.canRead(principal, locked, restrictMemberVisibility)) notFound(sessionId);
      this.writable(principal, locked);
      const settings: StoredSessionSettings = { ...locked.settings, ...input.sessionSettings };
      // A null setting removes it (e.g. `archivedAt: null` unarchives).
      for (const [field, value] of Object.entries(settings)) if (value === null) delete settings[field as keyof StoredSessionSettings];
      const changes = { ...(input.title !== undefined ? { title: input.title } : {}), settings, updatedAt: new Date() };
      changes.updatedAt = await this.repository.updateSession(manager, locked.id, changes);
      return toSessionView(Object.assign(locked, changes));
    });
  }

  async remove(principal: Principal, sessionId: string): Promise<void> {
    const session = this.writable(principal, await this.readable(principal, sessionId));
    await this.repository.deleteSession(session.id);
  }

  /**
   * Stores a user message (text, then images, then files, as content blocks) and moves the
   * session to pending, or keeps it running when an agent is at work.
   */
  async addMessage(
    principal: Principal,
    sessionId: string,
    input: AddMessageInput,
    idempotent?: IdempotentRequest,
  ): Promise<IdempotentResult<AddMessageResult>> {
    const content = userContent(input);
    if (!isUuid(sessionId)) notFound(sessionId);
    if (input.computerId !== undefined) await this.requireComputer(principal, input.computerId);
    // Owners and managers may write to any session of the organization, so they need no read
    // before the locked update unless the session's models must be checked; members must own the
    // session (ownership never changes).
    const restrictsModels = await this.policy.restrictsModels(principal);
    if (principal.role === Role.Member || restrictsModels) {
      const session = await this.readable(principal, sessionId);
      if (principal.role === Role.Member) this.writable(principal, session);
      // A model blocked since the session chose it takes no more turns.
      if (restrictsModels) await this.policy.requireModels(principal, session.settings);
    }
    // Which agents are there, asked before the message is added: after it, the query would delay the agent woken for it.
    const live = await this.presence.liveQueues(principal.organizationId);
    const messageId = newId();
    let published: SessionChange | undefined;
    const add = async (manager: EntityManager) => {
      const change = await this.repository.addUserMessage(
        {
          sessionId,
          organizationId: principal.organizationId,
          messageId,
          computerId: input.computerId ?? null,
          authorId: principal.userId,
          source: API_MESSAGE_SOURCE,
          content,
          actor: eventActorOf(principal),
        },
        manager,
      );
      if (!change) notFound(sessionId);
      assertTransition(SessionTrigger.UserMessageAdded, change.previousStatus, change.session.status);
      published = change;
      return { messageId, status: change.session.status };
    };
    // One statement: with no idempotency key, no transaction either.
    const result = await this.idempotency.run(principal, idempotent, add, 200, { oneStatement: true });
    // Said on every answer, a replayed one too: whether an agent will take the work is about now.
    const reasonFor = (session: SessionEntity | null) => (session ? AgentPresence.reason(live, session) : null);
    const reason = published
      ? reasonFor(published.session)
      : result.body.status === SessionStatus.Pending
        ? reasonFor(await this.repository.findSession(sessionId, principal.organizationId))
        : null;
    return reason ? { ...result, body: { ...result.body, warnings: [reason] } } : result;
  }

  async listMessages(
    principal: Principal,
    sessionId: string,
    query: { cursor?: string; limit: number; computerId?: string; role?: MessageRole; newestFirst?: boolean },
  ): Promise<Page<MessageView>> {
    if (principal.features.messageHistory !== true) {
      throw new SessionsError(
        SessionsErrorCode.MessageHistoryDisabled,
        'Reading message history is not enabled for your organization.',
      );
    }
    if (query.computerId !== undefined) await this.requireComputer(principal, query.computerId);
    const found = isUuid(sessionId)
      ? await this.repository.listMessages(sessionId, principal.organizationId, { ...query, maxBytes: this.config.MESSAGE_PAGE_MAX_BYTES })
      : null;
    if (!found || (query.computerId !== undefined && found.session.computerId !== query.computerId)) notFound(sessionId);
    await this.readableEntity(principal, found.session, sessionId);
    return { items: found.page.items.map(toMessageView), pagination: found.page.pagination };
  }

  /**
   * Opens a session in which the server records work it does itself (a computer's provisioning
   * output), inside the caller's transaction. It stays `idle`: no agent is asked to answer it.
   */
  async openServerLog(manager: EntityManager, input: { organizationId: string; ownerId: string; computerId: string; title: string }): Promise<string> {
    const now = new Date();
    const session = Object.assign(new SessionEntity(), {
      id: newId(),
      organizationId: input.organizationId,
      ownerId: input.ownerId,
      computerId: input.computerId,
      title: input.title,
      status: SessionStatus.Idle,
      settings: {},
      createdAt: now,
      updatedAt: now,
    });
    await this.repository.insertSession(manager, session);
    return session.id;
  }

  /** Appends one `tool` message of text to a server log; false when the session is gone. */
  async appendServerLog(organizationId: string, sessionId: string, text: string): Promise<boolean> {
    const messageId = newId();
    return this.repository.transaction(async (manager) => {
      const seq = await this.repository.appendServerMessage(manager, {
        sessionId,
        organizationId,
        messageId,
        role: MessageRole.Tool,
        content: [{ type: 'text', text: storable(text) }],
      });
      if (seq === null) return false;
      this.events.raise(manager, {
        type: 'message.added',
        organizationId,
        sessionId,
        actor: { kind: 'system' },
        data: { sessionId, messageId, role: MessageRole.Tool, authorId: null, computerId: null },
      });
      return true;
    });
  }

  /** The session if the caller may read it; 404 otherwise, whatever the reason. */
  async readable(principal: Principal, sessionId: string, computerId?: string): Promise<SessionEntity> {
    if (computerId !== undefined) await this.requireComputer(principal, computerId);
    const session = isUuid(sessionId) ? await this.repository.findSession(sessionId, principal.organizationId) : null;
    if (!session || (computerId !== undefined && session.computerId !== computerId)) notFound(sessionId);
    return this.readableEntity(principal, session, sessionId);
  }

  private async readableEntity<S extends Pick<SessionEntity, 'organizationId' | 'ownerId'>>(principal: Principal, session: S, sessionId: string): Promise<S> {
    const { restrictMemberVisibility } = await this.controls.read(principal.organizationId);
    if (!AccessPolicy.canRead(principal, session, restrictMemberVisibility)) notFound(sessionId);
    return session;
  }

  /** A readable session the caller may not change answers 403. */
  private writable(principal: Principal, session: SessionEntity): SessionEntity {
    if (!AccessPolicy.canWrite(principal, session)) {
      throw new SessionsError(
        SessionsErrorCode.ReadOnlyRole,
        principal.role === Role.Guest
          ? 'Guests can read their sessions but not change them.'
          : 'Members can change only their own sessions; this one belongs to someone else.',
      );
    }
    return session;
  }

  private async seesOnlyOwnSessions(principal: Principal): Promise<boolean> {
    if (principal.role === Role.Guest) return true;
    if (principal.role !== Role.Member) return false;
    return (await this.controls.read(principal.organizationId)).restrictMemberVisibility;
  }

  private async requireComputer(principal: Principal, computerId: string): Promise<void> {
    if (!isUuid(computerId) || !(await this.computers.visibleTo(principal, computerId))) {
      throw new SessionsError(SessionsErrorCode.ComputerNotFound, `No computer ${computerId} exists in your organization.`, {
        field: 'computerId',
      });
    }
  }
}

/** Command output may hold what PostgreSQL cannot store in jsonb (NUL, unpaired surrogates): replaced by U+FFFD. */
function storable(text: string): string {
  // eslint-disable-next-line no-control-regex -- replacing NUL is the point
  return text.replace(/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

function notFound(sessionId: string): never {
  throw new SessionsError(SessionsErrorCode.SessionNotFound, `No session ${sessionId} exists in your organization.`);
}

function withoutServerMaintained(settings: StoredSessionSettings): StoredSessionSettings {
  const copy = { ...settings };
  for (const field of SERVER_MAINTAINED_SETTINGS) delete copy[field];
  return copy;
}

/** The user message's content blocks, after checking what the schema cannot: blank text, base64, media types. */
function userContent(input: AddMessageInput): ContentBlock[] {
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
    ...(input.images ?? []).map((source) => ({ type: 'image', source })),
    ...(input.files ?? []).map((source) => ({ type: 'document', source })),
  ];
}

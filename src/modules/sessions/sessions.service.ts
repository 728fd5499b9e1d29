import type { ApiSchema } from '../../platform/http/api-schema';
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { eventActorOf, Principal } from '../auth';
import { EventLog } from '../../platform/events';
import { isUuid, newId } from '../../platform/database/ids';
import { IdempotencyService, IdempotentRequest, IdempotentResult } from '../../platform/idempotency';
import { Page } from '../../platform/http/pagination';
import { SessionEntity } from './entities';
import { ArchivedFilter, SERVER_MAINTAINED_SETTINGS, StoredSessionSettings } from './domain/session-settings';
import { SessionStatus } from './domain/session-status';
import { SessionView, StatusReason, toSessionView } from './domain/views';
import { AgentAvailability } from './contracts/agent-availability';
import { SessionPolicy } from './session-policy';
import { SessionAccess } from './session-access.service';
import { sessionNotFound } from './domain/sessions.errors';
import { SessionsRepository } from './sessions.repository';

export type CreateSessionInput = ApiSchema<'CreateSessionBody'>;
export type UpdateSessionInput = ApiSchema<'UpdateSessionBody'>;

/** The public v0 sessions API's sessions: create, read, list, update and delete them, under the role matrix. */
@Injectable()
export class SessionsService {
  constructor(
    private readonly repository: SessionsRepository,
    private readonly access: SessionAccess,
    private readonly policy: SessionPolicy,
    private readonly idempotency: IdempotencyService,
    private readonly events: EventLog,
    private readonly agents: AgentAvailability,
  ) {}

  async create(principal: Principal, input: CreateSessionInput, idempotent?: IdempotentRequest): Promise<IdempotentResult<SessionView>> {
    const session = await this.prepare(principal, input);
    return this.idempotency.run(
      principal,
      idempotent,
      async (manager) => {
        await this.insert(manager, principal, session);
        return toSessionView(session);
      },
      201,
    );
  }

  /** A new session of the caller's, checked (its computer, its models) and not stored yet: `insert` stores it. */
  async prepare(principal: Principal, input: CreateSessionInput): Promise<SessionEntity> {
    if (input.computerId !== undefined) await this.access.requireComputer(principal, input.computerId);
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
    return session;
  }

  /** Stores a prepared session, with its `session.created` event, in the caller's transaction. */
  async insert(manager: EntityManager, principal: Principal, session: SessionEntity): Promise<void> {
    await this.repository.insertSession(manager, session);
    this.events.raise(manager, {
      type: 'session.created',
      organizationId: session.organizationId,
      sessionId: session.id,
      actor: eventActorOf(principal),
      data: { sessionId: session.id, ownerId: session.ownerId, computerId: session.computerId, title: session.title },
    });
  }

  async get(principal: Principal, sessionId: string, computerId?: string): Promise<SessionView> {
    const session = await this.access.readable(principal, sessionId, computerId);
    return toSessionView(session, await this.statusReason(principal.organizationId, session));
  }

  async list(
    principal: Principal,
    query: { cursor?: string; limit: number; computerId?: string; archived?: ArchivedFilter; tag?: string },
  ): Promise<Page<SessionView>> {
    if (query.computerId !== undefined) await this.access.requireComputer(principal, query.computerId);
    const ownerId = (await this.access.seesOnlyOwnSessions(principal)) ? principal.userId : undefined;
    const page = await this.repository.listSessions(
      { organizationId: principal.organizationId, ownerId, computerId: query.computerId, archived: query.archived ?? 'exclude', tag: query.tag },
      query.cursor,
      query.limit,
    );
    const reasonFor = page.items.some((s) => s.status === SessionStatus.Pending) ? await this.agents.reasonsNow(principal.organizationId) : () => null;
    return { items: page.items.map((s) => toSessionView(s, reasonFor(s))), pagination: page.pagination };
  }

  /** Why no agent will take the session (only a pending one can be in that state), or null. */
  private async statusReason(organizationId: string, session: Pick<SessionEntity, 'status' | 'workComputerId' | 'ownerId'>): Promise<StatusReason | null> {
    if (session.status !== SessionStatus.Pending) return null;
    return (await this.agents.reasonsNow(organizationId))(session);
  }

  async update(principal: Principal, sessionId: string, input: UpdateSessionInput): Promise<SessionView> {
    if (!isUuid(sessionId)) throw sessionNotFound(sessionId);
    // Read before the transaction: on PGlite's one connection, a read outside it would wait for it.
    const canRead = await this.access.readCheck(principal);
    if (input.sessionSettings) await this.policy.requireModels(principal, input.sessionSettings);
    return this.repository.transaction(async (manager) => {
      const locked = await this.repository.findSession(sessionId, principal.organizationId, manager, true);
      if (!locked || !canRead(locked)) throw sessionNotFound(sessionId);
      this.access.writable(principal, locked);
      const merged: Record<string, unknown> = { ...locked.settings, ...input.sessionSettings };
      // A null setting removes it (e.g. `archivedAt: null` unarchives); what is left is the schema's, checked.
      for (const [field, value] of Object.entries(merged)) if (value === null) delete merged[field];
      const settings = merged as StoredSessionSettings;
      const changes = { ...(input.title !== undefined ? { title: input.title } : {}), settings, updatedAt: new Date() };
      changes.updatedAt = await this.repository.updateSession(manager, locked, changes);
      return toSessionView(Object.assign(locked, changes));
    });
  }

  /** Which of these ids name a session the caller may read (an agent asks, to clean up after deleted sessions). */
  async existing(principal: Principal, ids: string[]): Promise<string[]> {
    const wanted = ids.map((id) => id.toLowerCase());
    const canRead = await this.access.readCheck(principal);
    const among = await this.repository.sessionsAmong(principal.organizationId, wanted);
    const found = new Set(among.filter((session) => canRead({ ...session, organizationId: principal.organizationId })).map((session) => session.id));
    return wanted.filter((id) => found.has(id));
  }

  async remove(principal: Principal, sessionId: string): Promise<void> {
    const session = this.access.writable(principal, await this.access.readable(principal, sessionId));
    await this.repository.deleteSession(session);
  }
}

function withoutServerMaintained(settings: StoredSessionSettings): StoredSessionSettings {
  const copy = { ...settings };
  for (const field of SERVER_MAINTAINED_SETTINGS) delete copy[field];
  return copy;
}

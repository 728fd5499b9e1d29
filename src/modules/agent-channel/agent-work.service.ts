import type { ApiSchema } from '../../platform/http/api-schema';
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { AccessPolicy, eventActorOf, Principal } from '../auth';
import { EventLog } from '../../platform/events';
import { isUuid } from '../../platform/database/ids';
import { IdempotencyService, IdempotentRequest, IdempotentResult } from '../../platform/idempotency';
import { FieldError, validationError } from '../../platform/http/validation';
import { decodeCursor } from '../../platform/http/cursor';
import { Page } from '../../platform/http/pagination';
import { ToolApprovalLedger } from './tool-approval-ledger';
import {
  assertTransition,
  checkContentPayloads,
  MESSAGE_ATTRIBUTE_FIELDS,
  MessageView,
  SessionEntity,
  SessionsError,
  SessionsErrorCode,
  SessionStatus,
  SessionTrigger,
  SessionTurns,
  SessionView,
  statusAfterTurn,
  TokenUsage,
  toMessageView,
  toSessionView,
  turnNotActive,
} from '../sessions';

/** A message as the agent appends it (AppendMessagesBody). */
export type AgentMessageInput = ApiSchema<'AppendMessagesBody'>['messages'][number];

/**
 * The agent channel, once an agent took work (WorkClaims): it writes its messages, reads the
 * conversation, reports token usage and ends its turn. A turn holds a lease that every call renews;
 * a turn whose agent goes silent past the lease is given to the next agent that asks.
 */
@Injectable()
export class AgentWorkService {
  constructor(
    private readonly sessionTurns: SessionTurns,
    private readonly idempotency: IdempotencyService,
    private readonly events: EventLog,
    private readonly config: AppConfig,
    private readonly ledger: ToolApprovalLedger,
  ) {}

  async appendMessages(
    principal: Principal,
    sessionId: string,
    input: { turnId: string; messages: AgentMessageInput[] },
    idempotent?: IdempotentRequest,
  ): Promise<IdempotentResult<{ messages: MessageView[] }>> {
    const errors: FieldError[] = input.messages.flatMap((message, i) => checkContentPayloads(message.content, `messages[${i}].content`));
    if (errors.length > 0) throw validationError(errors);
    return this.idempotency.run(principal, idempotent, async (manager) => {
      const session = await this.lockTurn(manager, principal, sessionId, input.turnId);
      const added = await this.sessionTurns.appendAgentMessages(manager, session, {
        messages: input.messages.map((message) => ({
          role: message.role,
          parentId: message.parentId,
          content: message.content,
          attributes: attributesOf(message),
        })),
        leaseExpiresAt: this.leaseFrom(new Date()),
      });
      const actor = eventActorOf(principal);
      this.events.raise(
        manager,
        ...added.map((m) => ({
          type: 'message.added' as const,
          organizationId: principal.organizationId,
          sessionId: session.id,
          actor,
          data: { sessionId: session.id, messageId: m.id, role: m.role, authorId: null, computerId: null },
        })),
      );
      return { messages: added.map(toMessageView) };
    });
  }

  async reportUsage(
    principal: Principal,
    sessionId: string,
    input: { turnId: string; model: string; provider?: string; api?: string } & Partial<TokenUsage>,
    idempotent?: IdempotentRequest,
  ): Promise<IdempotentResult<{ session: SessionView }>> {
    const usage: TokenUsage = {
      inputTokens: input.inputTokens ?? 0,
      outputTokens: input.outputTokens ?? 0,
      cacheCreationTokens: input.cacheCreationTokens ?? 0,
      cacheReadTokens: input.cacheReadTokens ?? 0,
      thinkingTokens: input.thinkingTokens ?? 0,
    };
    const now = new Date();
    return this.idempotency.run(principal, idempotent, async (manager) => {
      const session = await this.lockTurn(manager, principal, sessionId, input.turnId);
      const updated = await this.sessionTurns.addTokenUsage(manager, {
        session,
        model: input.model,
        usage,
        locks: { provider: input.provider ?? null, api: input.api ?? null },
        leaseExpiresAt: this.leaseFrom(now),
        now,
        day: now.toISOString().slice(0, 10),
      });
      this.events.raise(manager, {
        type: 'turn.usage_reported',
        organizationId: principal.organizationId,
        sessionId: session.id,
        actor: eventActorOf(principal),
        data: { sessionId: session.id, userId: session.ownerId, model: input.model, usage },
      });
      return { session: toSessionView(updated) };
    });
  }

  /** Renews the lease and says whether a user interrupted the turn (an interrupted turn's lease is not renewed). */
  async heartbeat(
    principal: Principal,
    sessionId: string,
    input: { turnId: string },
    idempotent?: IdempotentRequest,
  ): Promise<IdempotentResult<{ leaseExpiresAt: number; interrupted: boolean }>> {
    const leaseExpiresAt = this.leaseFrom(new Date());
    return this.idempotency.run(principal, idempotent, async (manager) => {
      const session = await this.lockTurn(manager, principal, sessionId, input.turnId);
      const lease = await this.sessionTurns.extendLease(manager, session, leaseExpiresAt);
      return { leaseExpiresAt: lease.getTime(), interrupted: session.turnInterruptedAt !== null };
    });
  }

  /**
   * The session's messages, for the agent holding its running turn: how an agent that restarted, or
   * another agent that took the session over, picks the conversation up. Where the organization's
   * `messageHistory` feature is off, only the turn's own messages (its work, from the claim's
   * `messagesCursor` on) may be read: what came before is history.
   */
  async conversation(principal: Principal, sessionId: string, query: { turnId: string; cursor?: string; limit: number }): Promise<Page<MessageView>> {
    const session = isUuid(sessionId) ? await this.sessionTurns.find(sessionId, principal.organizationId) : null;
    if (!session || !mayWorkOn(principal, session)) {
      throw new SessionsError(SessionsErrorCode.SessionNotFound, `No session ${sessionId} exists in your organization.`);
    }
    if (session.status !== SessionStatus.Running || session.turnId !== query.turnId.toLowerCase()) {
      throw turnNotActive(sessionId, query.turnId, session.status);
    }
    if (principal.features.messageHistory !== true) {
      const from = query.cursor === undefined ? 0 : (decodeCursor(`messages:${session.id}`, query.cursor, ['number'])[0] as number);
      if (from < session.turnBaseSeq) {
        throw new SessionsError(
          SessionsErrorCode.MessageHistoryDisabled,
          "Reading message history is not enabled for your organization: only the running turn's own messages can be read, from the claim's messagesCursor on.",
        );
      }
    }
    const found = await this.sessionTurns.listMessages(session.id, principal.organizationId, { ...query, maxBytes: this.config.MESSAGE_PAGE_MAX_BYTES });
    if (!found) throw new SessionsError(SessionsErrorCode.SessionNotFound, `No session ${sessionId} exists in your organization.`);
    return { items: found.page.items.map(toMessageView), pagination: found.page.pagination };
  }

  /**
   * Ends the turn: idle, or pending again when user messages arrived that the agent never took (an
   * interrupted turn ends idle whatever arrived). Approvals the turn still waits for are cancelled.
   */
  async endTurn(
    principal: Principal,
    sessionId: string,
    input: { turnId: string; assistantActiveTimeMs?: number },
    idempotent?: IdempotentRequest,
  ): Promise<IdempotentResult<{ session: SessionView }>> {
    const now = new Date();
    return this.idempotency.run(principal, idempotent, async (manager) => {
      const session = await this.lockTurn(manager, principal, sessionId, input.turnId);
      const next = statusAfterTurn(session);
      assertTransition(SessionTrigger.AgentEndedTurn, session.status, next);
      await this.ledger.cancelPending(manager, session, eventActorOf(principal));
      const ended = await this.sessionTurns.endTurn(manager, session, { status: next, now, activeTimeMs: input.assistantActiveTimeMs ?? 0 });
      this.events.raise(manager, {
        type: 'session.status_changed',
        organizationId: principal.organizationId,
        sessionId: session.id,
        actor: eventActorOf(principal),
        data: { sessionId: session.id, from: SessionStatus.Running, to: next },
      });
      return { session: toSessionView(ended) };
    });
  }

  /** The session, locked, if `turnId` is its running turn: 404 for no such session, 409 for a turn that is over. */
  async lockTurn(manager: EntityManager, principal: Principal, sessionId: string, turnId: string): Promise<SessionEntity> {
    const session = isUuid(sessionId) && isUuid(turnId) ? await this.sessionTurns.lockTurn(manager, sessionId, principal.organizationId, turnId) : null;
    if (session && mayWorkOn(principal, session)) return session;
    const exists = isUuid(sessionId) ? await this.sessionTurns.find(sessionId, principal.organizationId, manager) : null;
    if (!exists || !mayWorkOn(principal, exists)) {
      throw new SessionsError(SessionsErrorCode.SessionNotFound, `No session ${sessionId} exists in your organization.`);
    }
    throw turnNotActive(sessionId, turnId, exists.status);
  }

  private leaseFrom(now: Date): Date {
    return new Date(now.getTime() + this.config.AGENT_LEASE_MS);
  }
}

/**
 * Agents write to sessions they may write to; a computer's token to turns it took from its
 * computer's queue (work routed elsewhere mid-turn does not take the running turn away).
 */
export function mayWorkOn(principal: Principal, session: SessionEntity): boolean {
  if (principal.credential.kind !== 'computer') return AccessPolicy.canWrite(principal, session);
  return session.organizationId === principal.organizationId && session.turnComputerId === principal.credential.computerId;
}

function attributesOf(message: AgentMessageInput): Record<string, unknown> {
  const attributes: Record<string, unknown> = {};
  const fields: Record<string, unknown> = message;
  for (const field of MESSAGE_ATTRIBUTE_FIELDS) if (fields[field] !== undefined) attributes[field] = fields[field];
  return attributes;
}

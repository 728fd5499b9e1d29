import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { isUuid, newId } from '../../platform/database/ids';
import { SessionsError, SessionsErrorCode } from './domain/sessions.errors';
import { MessageEntity, SessionEntity } from './entities';
import { SessionKey } from './session-rows';
import { SessionsRepository } from './sessions.repository';
import { TokenUsageRepository } from './token-usage.repository';
import { TurnsRepository } from './turns.repository';

type Args<M extends (...args: never[]) => unknown> = Parameters<M>;

/**
 * What the agent channel may do to a session: take, lease, interrupt and end its turn, add the agent's messages and
 * usage, read the turn's work. The turn's state lives in the session's row, not in a table of the agent channel's,
 * because the session's `status` is derived from it and changes in the same statement (a claim makes it `running`, a
 * user message `pending`); two rows would make every message two writes. So Sessions keeps the row and its SQL,
 * and this is the one door to it. Every method that takes a manager runs in the caller's transaction.
 */
@Injectable()
export class SessionTurns {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly usage: TokenUsageRepository,
  ) {}

  /** The session (locked for the rest of the caller's transaction when asked), or null. */
  find(...args: Args<SessionsRepository['findSession']>) {
    return this.sessions.findSession(...args);
  }

  lockNextWork(...args: Args<TurnsRepository['lockNextWork']>) {
    return this.turns.lockNextWork(...args);
  }

  nextLeaseExpiry(...args: Args<TurnsRepository['nextLeaseExpiry']>) {
    return this.turns.nextLeaseExpiry(...args);
  }

  startTurn(...args: Args<TurnsRepository['startTurn']>) {
    return this.turns.startTurn(...args);
  }

  lockTurn(...args: Args<TurnsRepository['lockTurn']>) {
    return this.turns.lockTurn(...args);
  }

  extendLease(...args: Args<TurnsRepository['extendLease']>) {
    return this.turns.extendLease(...args);
  }

  interruptTurn(...args: Args<TurnsRepository['interruptTurn']>) {
    return this.turns.interruptTurn(...args);
  }

  lockLapsedInterruptedTurns(...args: Args<TurnsRepository['lockLapsedInterruptedTurns']>) {
    return this.turns.lockLapsedInterruptedTurns(...args);
  }

  anyLapsedInterruptedTurn(...args: Args<TurnsRepository['anyLapsedInterruptedTurn']>) {
    return this.turns.anyLapsedInterruptedTurn(...args);
  }

  endTurn(...args: Args<TurnsRepository['endTurn']>) {
    return this.turns.endTurn(...args);
  }

  /** Counts a usage report on the session (and renews the lease) and on the day's totals of its owner and model. */
  async addTokenUsage(manager: EntityManager, input: Args<TurnsRepository['addTokenUsage']>[1] & { day: string }): Promise<SessionEntity> {
    const updated = await this.turns.addTokenUsage(manager, input);
    const { session } = input;
    await this.usage.addDailyUsage(manager, {
      organizationId: session.organizationId,
      day: input.day,
      userId: session.ownerId,
      model: input.model,
      usage: input.usage,
    });
    return updated;
  }

  /** A tool call of the turn now waits for a person (+1), or no longer does (-1): the session view's `pendingToolApprovals`. */
  countPendingApprovals(manager: EntityManager, session: SessionKey, change: 1 | -1): Promise<void> {
    return this.turns.countPendingApprovals(manager, session, change);
  }

  /**
   * Adds the agent's messages to the session under its row lock (held by the caller), numbered after the newest and
   * renewing the turn's lease. A message without `parentId` follows the one before it. 422 when a `parentId` names
   * no message of the session (nothing is written).
   */
  async appendAgentMessages(
    manager: EntityManager,
    session: SessionKey,
    input: { messages: Array<Pick<MessageEntity, 'role' | 'content' | 'attributes'> & { parentId?: string }>; leaseExpiresAt: Date },
  ): Promise<MessageEntity[]> {
    const parents = input.messages.map((message) => message.parentId).filter((id): id is string => id !== undefined);
    const known = await this.sessions.existingMessageIds(manager, session, parents.filter(isUuid));
    const missing = input.messages.flatMap((message, i) =>
      message.parentId !== undefined && !known.has(message.parentId) ? [{ field: `messages[${i}].parentId`, message: 'is not a message of this session' }] : [],
    );
    if (missing.length > 0) {
      throw new SessionsError(SessionsErrorCode.ParentNotFound, `${missing[0].field}: ${missing[0].message}`, { errors: missing });
    }
    const ids = input.messages.map(() => newId());
    const change = await this.sessions.reserveAgentMessages(manager, {
      session,
      count: ids.length,
      lastMessageId: ids[ids.length - 1],
      leaseExpiresAt: input.leaseExpiresAt,
    });
    const now = change.session.updatedAt;
    const firstSeq = change.session.messageCount - ids.length + 1;
    const added = input.messages.map((message, i) =>
      Object.assign(new MessageEntity(), {
        organizationId: session.organizationId,
        id: ids[i],
        sessionId: session.id,
        seq: firstSeq + i,
        role: message.role,
        parentId: message.parentId ?? (i === 0 ? change.previousLastMessageId : ids[i - 1]),
        userMessageSource: null,
        authorId: null,
        content: message.content,
        attributes: message.attributes,
        createdAt: now,
        updatedAt: now,
      }),
    );
    await this.sessions.insertMessages(manager, added);
    return added;
  }

  userMessagesAfter(...args: Args<SessionsRepository['userMessagesAfter']>) {
    return this.sessions.userMessagesAfter(...args);
  }

  listMessages(...args: Args<SessionsRepository['listMessages']>) {
    return this.sessions.listMessages(...args);
  }

  addUserMessage(...args: Args<SessionsRepository['addUserMessage']>) {
    return this.sessions.addUserMessage(...args);
  }
}

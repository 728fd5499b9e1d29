import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { newId } from '../../platform/database/ids';
import { MessageEntity, SessionEntity } from './entities';
import { ContentBlock, MessageRole } from './domain/message';
import { StoredSessionSettings, TOKEN_USAGE_FIELDS, TokenUsage } from './domain/session-settings';
import { SessionStatus } from './domain/session-status';
import { EventLog } from '../../platform/events';
import { SessionsRepository } from './sessions.repository';
import { TokenUsageRepository } from './token-usage.repository';

/** A conversation that happened in the past, with its own timestamps. */
export interface PastSession {
  organizationId: string;
  ownerId: string;
  title: string;
  settings: StoredSessionSettings;
  createdAt: Date;
  messages: Array<{
    role: MessageRole;
    content: ContentBlock[];
    createdAt: Date;
    attributes?: Record<string, unknown>;
    /** User messages: where they came from, and who wrote them (default: the owner). */
    userMessageSource?: string;
    authorId?: string;
  }>;
  usage: Array<{ model: string; at: Date; usage: TokenUsage }>;
}

/**
 * Writes past conversations (the demo's history) as live activity is written: the session, its
 * messages, the day's usage totals and their events, in one transaction, each at its own time (the
 * events' `occurredAt`), so listeners (analytics among them) see the history as it happened.
 */
@Injectable()
export class HistoryImportService {
  constructor(
    private readonly repository: SessionsRepository,
    private readonly usage: TokenUsageRepository,
    private readonly events: EventLog,
  ) {}

  /** Whether the organization has sessions created before `before` (history already there). */
  hasSessionsBefore(organizationId: string, before: Date): Promise<boolean> {
    return this.repository.hasSessionsBefore(organizationId, before);
  }

  /** One past session; see `importSessions`. */
  async importSession(past: PastSession): Promise<string> {
    const [id] = await this.importSessions([past]);
    return id;
  }

  /** Past sessions in one transaction (one commit for a whole history, not one per session). */
  async importSessions(pasts: PastSession[]): Promise<string[]> {
    return this.repository.transaction(async (manager) => {
      const ids: string[] = [];
      for (const past of pasts) ids.push(await this.write(manager, past));
      return ids;
    });
  }

  private async write(manager: EntityManager, past: PastSession): Promise<string> {
    const ids = past.messages.map(() => newId());
    const messages = past.messages.map((m, i) =>
      Object.assign(new MessageEntity(), {
        id: ids[i],
        seq: i + 1,
        role: m.role,
        parentId: i === 0 ? null : ids[i - 1],
        userMessageSource: m.role === MessageRole.User ? (m.userMessageSource ?? 'web') : null,
        authorId: m.role === MessageRole.User ? (m.authorId ?? past.ownerId) : null,
        content: m.content,
        attributes: m.attributes ?? {},
        createdAt: m.createdAt,
        updatedAt: m.createdAt,
      }),
    );
    const last = messages[messages.length - 1];
    const tokenUsage = Object.fromEntries(
      TOKEN_USAGE_FIELDS.map((field) => [field, past.usage.reduce((sum, u) => sum + u.usage[field], 0)]),
    ) as unknown as TokenUsage;
    const session = Object.assign(new SessionEntity(), {
      id: newId(),
      organizationId: past.organizationId,
      ownerId: past.ownerId,
      computerId: null,
      title: past.title,
      status: SessionStatus.Idle,
      messageCount: messages.length,
      lastMessageId: last?.id ?? null,
      lastUserSeq: messages.filter((m) => m.role === MessageRole.User).pop()?.seq ?? 0,
      settings: past.usage.length > 0 ? { ...past.settings, tokenUsage } : past.settings,
      createdAt: past.createdAt,
      updatedAt: last?.createdAt ?? past.createdAt,
      completedAt: last?.createdAt ?? null,
    });
    for (const m of messages) Object.assign(m, { organizationId: session.organizationId, sessionId: session.id });
    await this.repository.importSession(manager, session, messages);
    const common = { organizationId: session.organizationId, sessionId: session.id, actor: { kind: 'system' as const } };
    this.events.raise(manager, {
      ...common,
      type: 'session.created',
      occurredAt: session.createdAt,
      data: { sessionId: session.id, ownerId: session.ownerId, computerId: null, title: session.title },
    });
    this.events.raise(
      manager,
      ...messages.map((m) => ({
        ...common,
        type: 'message.added' as const,
        occurredAt: m.createdAt,
        data: { sessionId: session.id, messageId: m.id, role: m.role, authorId: m.authorId, computerId: null },
      })),
    );
    for (const report of past.usage) {
      const day = report.at.toISOString().slice(0, 10);
      await this.usage.addDailyUsage(manager, {
        organizationId: session.organizationId,
        day,
        userId: session.ownerId,
        model: report.model,
        usage: report.usage,
      });
      this.events.raise(manager, {
        ...common,
        type: 'turn.usage_reported',
        occurredAt: report.at,
        data: { sessionId: session.id, userId: session.ownerId, model: report.model, usage: report.usage },
      });
    }
    return session.id;
  }
}

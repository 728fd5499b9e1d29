import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ActivityRecorder, FactStatement } from '../sessions';
import { AnalyticsRepository } from './analytics.repository';
import { agentMessageFacts, delegationLevelOf, Fact, FactKind, MessageFacts, SessionFacts, userMessageFacts } from './domain/facts';

/** Every interactionMode and autonomyLevel a session may have (`''`: unset), keyed `mode|level`. */
const INTERACTION_MODES = ['', 'auto', 'spec', 'ask'];
const AUTONOMY_LEVELS = ['', 'off', 'low', 'medium', 'high'];
const DELEGATION_BY_SETTINGS = JSON.stringify(
  Object.fromEntries(
    INTERACTION_MODES.flatMap((mode) =>
      AUTONOMY_LEVELS.map((level) => [`${mode}|${level}`, delegationLevelOf({ interactionMode: mode || undefined, autonomyLevel: level || undefined })]),
    ),
  ),
);

interface RecordedSession extends SessionFacts {
  organizationId: string;
  createdAt: Date;
}

/** Turns a session's activity into facts, written in the caller's transaction (bound into Sessions at start-up). */
@Injectable()
export class FactRecorder implements ActivityRecorder {
  constructor(private readonly repository: AnalyticsRepository) {}

  async sessionStarted(manager: EntityManager, session: RecordedSession): Promise<void> {
    await this.write(manager, session.organizationId, [
      { kind: FactKind.SessionStarted, at: session.createdAt, userId: session.ownerId, sessionId: session.id },
    ]);
  }

  async messagesAdded(manager: EntityManager, session: RecordedSession, messages: MessageFacts[]): Promise<void> {
    const facts = messages.flatMap((message) => (message.role === 'user' ? userMessageFacts(session, message) : agentMessageFacts(session, message)));
    await this.write(manager, session.organizationId, facts);
  }

  /**
   * A user message's facts as a CTE of the statement that stores it: the facts are known before the
   * statement but for the session's delegation level, which is looked up from its settings there
   * (a table built from `delegationLevelOf`, so SQL holds no rule of its own).
   */
  userMessageStatement(message: { authorId: string; source: string; content: MessageFacts['content'] }): FactStatement {
    const facts = userMessageFacts(
      { id: '', ownerId: message.authorId, settings: {} },
      { role: 'user', userMessageSource: message.source, authorId: message.authorId, content: message.content, attributes: {}, createdAt: new Date() },
    );
    return {
      params: [message.authorId, facts.map((f) => f.kind), facts.map((f) => f.client ?? null), facts.map((f) => f.name ?? null), DELEGATION_BY_SETTINGS, delegationLevelOf({})],
      cte: (p) => AnalyticsRepository.userMessageFactsCte(p),
    };
  }

  async usageReported(manager: EntityManager, session: RecordedSession, report: { model: string; at: Date }): Promise<void> {
    await this.write(manager, session.organizationId, [
      { kind: FactKind.TokenReport, at: report.at, userId: session.ownerId, sessionId: session.id, name: report.model },
    ]);
  }

  private async write(manager: EntityManager, organizationId: string, facts: Fact[]): Promise<void> {
    if (facts.length > 0) await this.repository.insertFacts(manager, organizationId, facts);
  }
}

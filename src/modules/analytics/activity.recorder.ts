import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ActivityRecorder } from '../sessions';
import { AnalyticsRepository } from './analytics.repository';
import { agentMessageFacts, Fact, FactKind, MessageFacts, SessionFacts, userMessageFacts } from './domain/facts';

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

  async usageReported(manager: EntityManager, session: RecordedSession, report: { model: string; at: Date }): Promise<void> {
    await this.write(manager, session.organizationId, [
      { kind: FactKind.TokenReport, at: report.at, userId: session.ownerId, sessionId: session.id, name: report.model },
    ]);
  }

  private async write(manager: EntityManager, organizationId: string, facts: Fact[]): Promise<void> {
    if (facts.length > 0) await this.repository.insertFacts(manager, organizationId, facts);
  }
}

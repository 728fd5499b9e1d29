import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AnyStoredEvent, DurableListeners } from '../../platform/events';
import { SessionReader } from '../sessions';
import { AnalyticsRepository } from './analytics.repository';
import { agentMessageFacts, Fact, FactKind, userMessageFacts } from './domain/facts';

export const ACTIVITY_FACTS_LISTENER = 'analytics.facts';

/**
 * Turns Sessions' events into analytics facts: a durable listener of the event log, so a fact is
 * written once for each event, in the transaction that moves the listener past it, whatever crashes
 * or instances. Messages are read back from Sessions (the events carry ids), with their session's
 * settings for the delegation level.
 */
@Injectable()
export class ActivityFactsListener implements OnModuleInit {
  constructor(
    private readonly listeners: DurableListeners,
    private readonly sessions: SessionReader,
    private readonly repository: AnalyticsRepository,
  ) {}

  onModuleInit(): void {
    this.listeners.register({
      name: ACTIVITY_FACTS_LISTENER,
      types: ['session.created', 'message.added', 'turn.usage_reported'],
      handle: (manager, event) => this.handle(manager, event),
    });
  }

  private async handle(manager: EntityManager, events: AnyStoredEvent[]): Promise<void> {
    const organizationId = events[0].organizationId;
    // Messages are read back in one query; one deleted since (its session past retention) has no facts left to give.
    const messageIds = events.flatMap((event) => (event.type === 'message.added' ? [event.data.messageId] : []));
    const messages = messageIds.length > 0 ? await this.sessions.messagesWithSessions(manager, organizationId, messageIds) : [];
    const byId = new Map(messages.map((found) => [found.message.id, found]));
    const facts = events.flatMap((event): Fact[] => {
      switch (event.type) {
        case 'session.created':
          return [{ kind: FactKind.SessionStarted, at: event.occurredAt, userId: event.data.ownerId, sessionId: event.data.sessionId }];
        case 'turn.usage_reported':
          return [{ kind: FactKind.TokenReport, at: event.occurredAt, userId: event.data.userId, sessionId: event.data.sessionId, name: event.data.model }];
        case 'message.added': {
          const found = byId.get(event.data.messageId);
          if (!found) return [];
          return found.message.role === 'user' ? userMessageFacts(found.session, found.message) : agentMessageFacts(found.session, found.message);
        }
        default:
          return [];
      }
    });
    if (facts.length > 0) await this.repository.insertFacts(manager, organizationId, facts);
  }
}

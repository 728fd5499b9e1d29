import { MessageAddedEvent } from './message-added.event';
import { SessionCreatedEvent } from './session-created.event';
import { SessionStatusChangedEvent } from './session-status-changed.event';
import { TokenUsageReportedEvent } from './token-usage-reported.event';

declare module '../../../platform/events/domain-event' {
  interface DomainEventMap {
    'sessions.session.created': SessionCreatedEvent;
    'sessions.message.added': MessageAddedEvent;
    'sessions.session.statusChanged': SessionStatusChangedEvent;
    'sessions.tokenUsage.reported': TokenUsageReportedEvent;
  }
}

export { MessageAddedEvent, SessionCreatedEvent, SessionStatusChangedEvent, TokenUsageReportedEvent };

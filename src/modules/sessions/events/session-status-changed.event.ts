import { DomainEvent } from '../../../platform/events';
import { SessionStatus } from '../domain/session-status';

export class SessionStatusChangedEvent extends DomainEvent<'sessions.session.statusChanged'> {
  static readonly eventName = 'sessions.session.statusChanged';
  readonly name = SessionStatusChangedEvent.eventName;

  constructor(
    organizationId: string,
    occurredAt: Date,
    readonly sessionId: string,
    readonly from: SessionStatus,
    readonly to: SessionStatus,
  ) {
    super(organizationId, occurredAt);
  }
}

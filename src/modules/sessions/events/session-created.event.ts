import { DomainEvent } from '../../../platform/events';

export class SessionCreatedEvent extends DomainEvent<'sessions.session.created'> {
  static readonly eventName = 'sessions.session.created';
  readonly name = SessionCreatedEvent.eventName;

  constructor(
    organizationId: string,
    occurredAt: Date,
    readonly sessionId: string,
    readonly ownerId: string,
    readonly computerId: string | null,
  ) {
    super(organizationId, occurredAt);
  }
}

import { DomainEvent } from '../../../platform/events';
import { TokenUsage } from '../domain/session-settings';

/** An agent reported tokens used by one model in a session; `userId` is the session's owner. */
export class TokenUsageReportedEvent extends DomainEvent<'sessions.tokenUsage.reported'> {
  static readonly eventName = 'sessions.tokenUsage.reported';
  readonly name = TokenUsageReportedEvent.eventName;

  constructor(
    organizationId: string,
    occurredAt: Date,
    readonly sessionId: string,
    readonly userId: string,
    readonly model: string,
    readonly usage: TokenUsage,
  ) {
    super(organizationId, occurredAt);
  }
}

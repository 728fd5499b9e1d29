import { DomainEvent } from '../../../platform/events';
import { MessageRole } from '../domain/message';

/** A message was stored in a session (user messages from clients, the others from agents). */
export class MessageAddedEvent extends DomainEvent<'sessions.message.added'> {
  static readonly eventName = 'sessions.message.added';
  readonly name = MessageAddedEvent.eventName;

  constructor(
    organizationId: string,
    occurredAt: Date,
    readonly sessionId: string,
    readonly messageId: string,
    readonly role: MessageRole,
    readonly seq: number,
    /** The user who wrote a user message; null for agent messages. */
    readonly authorId: string | null,
    /** Where the work waits (user messages): a computer, or null for the unrouted queue. */
    readonly workComputerId: string | null,
  ) {
    super(organizationId, occurredAt);
  }
}

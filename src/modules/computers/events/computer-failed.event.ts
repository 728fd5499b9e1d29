import { DomainEvent } from '../../../platform/events';

/** A provisioning step failed: the computer is in error until retried or deleted. */
export class ComputerFailedEvent extends DomainEvent<'computers.computer.failed'> {
  static readonly eventName = 'computers.computer.failed';
  readonly name = ComputerFailedEvent.eventName;

  constructor(
    organizationId: string,
    occurredAt: Date,
    readonly computerId: string,
    readonly ownerId: string,
    readonly stepId: string,
    readonly error: string,
  ) {
    super(organizationId, occurredAt);
  }
}

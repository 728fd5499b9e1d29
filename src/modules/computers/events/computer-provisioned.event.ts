import { DomainEvent } from '../../../platform/events';

/** A managed computer's last provisioning step completed: it is active. */
export class ComputerProvisionedEvent extends DomainEvent<'computers.computer.provisioned'> {
  static readonly eventName = 'computers.computer.provisioned';
  readonly name = ComputerProvisionedEvent.eventName;

  constructor(
    organizationId: string,
    occurredAt: Date,
    readonly computerId: string,
    readonly ownerId: string,
    readonly provider: string,
    readonly clonedRepoDirectories: readonly string[],
  ) {
    super(organizationId, occurredAt);
  }
}

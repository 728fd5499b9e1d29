import { ComputerFailedEvent } from './computer-failed.event';
import { ComputerProvisionedEvent } from './computer-provisioned.event';

declare module '../../../platform/events/domain-event' {
  interface DomainEventMap {
    'computers.computer.provisioned': ComputerProvisionedEvent;
    'computers.computer.failed': ComputerFailedEvent;
  }
}

export { ComputerFailedEvent, ComputerProvisionedEvent };

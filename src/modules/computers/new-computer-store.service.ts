import { Injectable } from '@nestjs/common';
import { eventActorOf, Principal } from '../auth';
import { ServerLogs } from '../sessions';
import { EventLog } from '../../platform/events';
import { ComputerQuotas } from './computer-quotas.service';
import { ComputersRepository } from './computers.repository';
import { BYOM, LOCAL_PROVIDER } from './domain/computer';
import { ComputerEntity, ProvisioningStepEntity } from './entities';

/**
 * Stores a new computer in one transaction, or nothing: under the organization's quotas, its row,
 * its provisioning steps with the session that logs them, and `computer.created`.
 */
@Injectable()
export class NewComputerStore {
  constructor(
    private readonly repository: ComputersRepository,
    private readonly quotas: ComputerQuotas,
    private readonly logs: ServerLogs,
    private readonly events: EventLog,
  ) {}

  /** The provisioning log's session id, null when there are no steps (BYOM). */
  store(principal: Principal, computer: ComputerEntity, steps: ProvisioningStepEntity[]): Promise<string | null> {
    return this.repository.transaction(async (manager) => {
      await this.quotas.checkNewComputer(manager, principal, { managed: computer.provider !== BYOM, local: computer.provider === LOCAL_PROVIDER });
      await this.repository.insertComputer(manager, computer);
      let log: string | null = null;
      if (steps.length > 0) {
        log = await this.logs.open(manager, {
          organizationId: computer.organizationId,
          ownerId: computer.ownerId,
          computerId: computer.id,
          title: `Provisioning log: ${computer.name}`,
        });
        for (const step of steps) Object.assign(step, { organizationId: computer.organizationId, installSessionId: log });
        await this.repository.insertSteps(manager, steps);
      }
      this.events.raise(manager, {
        type: 'computer.created',
        organizationId: computer.organizationId,
        actor: eventActorOf(principal),
        data: { computerId: computer.id, name: computer.name, provider: computer.provider, ownerId: computer.ownerId, status: computer.status },
      });
      return log;
    });
  }
}

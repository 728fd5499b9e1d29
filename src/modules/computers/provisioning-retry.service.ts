import { Injectable } from '@nestjs/common';
import { eventActorOf, Principal } from '../auth';
import { EventLog } from '../../platform/events';
import { ComputerAccess } from './computer-access.service';
import { ComputerQuotas } from './computer-quotas.service';
import { ComputerViews } from './computer-views.service';
import { ComputersRepository } from './computers.repository';
import { ComputerTrigger, nextStatus } from './domain/computer-status';
import { ComputersError, ComputersErrorCode } from './domain/computers.errors';
import { ComputerView } from './domain/views';
import { ProvisioningJob } from './jobs/provisioning.job';

/** Puts a computer in error back to provisioning: its failed step runs again, then the rest. */
@Injectable()
export class ProvisioningRetry {
  constructor(
    private readonly repository: ComputersRepository,
    private readonly access: ComputerAccess,
    private readonly quotas: ComputerQuotas,
    private readonly events: EventLog,
    private readonly provisioning: ProvisioningJob,
    private readonly views: ComputerViews,
  ) {}

  async retry(principal: Principal, computerId: string): Promise<ComputerView> {
    const computer = await this.repository.transaction(async (manager) => {
      // The quotas' lock first, as on create, then the computer's row.
      const usage = await this.quotas.lockUsage(manager, principal.organizationId);
      const locked = await this.access.visible(principal, computerId, { manager, lock: true });
      const next = nextStatus(ComputerTrigger.Retried, locked.status);
      if (!next) {
        throw new ComputersError(ComputersErrorCode.NotFailed, `Computer ${computerId} is ${locked.status}; only a computer in error can be retried.`, {
          computerStatus: locked.status,
        });
      }
      this.quotas.checkProvisioning(principal, usage);
      await this.repository.retry(manager, locked);
      this.events.raise(manager, {
        type: 'computer.status_changed',
        organizationId: locked.organizationId,
        actor: eventActorOf(principal),
        data: { computerId: locked.id, provider: locked.provider, from: locked.status, to: next, step: null },
      });
      return this.repository.update(manager, locked, { status: next });
    });
    this.provisioning.wake();
    return this.views.withSteps(computer, 'full');
  }
}

import type { ApiSchema } from '../../platform/http/api-schema';
import { Injectable } from '@nestjs/common';
import { Principal } from '../auth';
import { ComputerAccess } from './computer-access.service';
import { ComputerViews } from './computer-views.service';
import { ComputersRepository } from './computers.repository';
import { computerNotFound, ComputersError, ComputersErrorCode } from './domain/computers.errors';
import { ComputerView } from './domain/views';

export type UpdateComputerInput = ApiSchema<'UpdateComputerBody'>;

/** Changes to a computer's own fields: a person renames it, its agent reports where it runs. */
@Injectable()
export class ComputerUpdates {
  constructor(
    private readonly repository: ComputersRepository,
    private readonly access: ComputerAccess,
    private readonly views: ComputerViews,
  ) {}

  async update(principal: Principal, computerId: string, input: UpdateComputerInput): Promise<ComputerView> {
    const updated = await this.repository.transaction(async (manager) => {
      const computer = await this.access.visible(principal, computerId, { manager });
      return this.repository.update(manager, computer, { name: input.name, remoteUser: input.remoteUser });
    });
    return this.views.withSteps(updated, 'list');
  }

  /** The computer's agent reports where it runs; only its own token may. */
  async connectAgent(principal: Principal, input: { hostname: string }): Promise<ComputerView> {
    if (principal.credential.kind !== 'computer') {
      throw new ComputersError(ComputersErrorCode.NotComputerCredential, "Connect with the computer's agent token (cpt_…), not an API key or JWT.");
    }
    const { computerId } = principal.credential;
    const updated = await this.repository.transaction(async (manager) => {
      const computer = await this.repository.find(computerId, principal.organizationId, manager, true);
      if (!computer) throw computerNotFound(computerId);
      return this.repository.update(manager, computer, { hostname: input.hostname, agentConnectedAt: new Date() });
    });
    return this.views.withSteps(updated, 'list');
  }
}

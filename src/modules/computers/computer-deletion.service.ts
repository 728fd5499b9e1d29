import { Injectable, Logger } from '@nestjs/common';
import { Authenticator, eventActorOf, Principal, securityActorOf } from '../auth';
import { EventLog } from '../../platform/events';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { LocalAgentSupervisor } from './agents/local-agent-supervisor';
import { ComputerAccess } from './computer-access.service';
import { ComputersRepository } from './computers.repository';
import { BYOM, LOCAL_PROVIDER } from './domain/computer';
import { computerNotFound } from './domain/computers.errors';
import { ComputeProvider } from './providers/compute-provider';

/** Deletes a computer (its steps, its token) and tears down what its provider made, its agent first. */
@Injectable()
export class ComputerDeletion {
  private readonly logger = new Logger(ComputerDeletion.name);

  constructor(
    private readonly repository: ComputersRepository,
    private readonly access: ComputerAccess,
    private readonly events: EventLog,
    private readonly authenticator: Authenticator,
    private readonly agents: LocalAgentSupervisor,
    private readonly provider: ComputeProvider,
  ) {}

  async remove(principal: Principal, computerId: string): Promise<void> {
    const computer = await this.access.visible(principal, computerId);
    const deleted = await this.repository.transaction(async (manager) => {
      if (!(await this.repository.delete(manager, computer))) return false;
      this.events.raise(manager, {
        type: 'computer.deleted',
        organizationId: computer.organizationId,
        actor: eventActorOf(principal),
        data: { computerId: computer.id, name: computer.name, provider: computer.provider, ownerId: computer.ownerId },
      });
      return true;
    });
    // Deleted meanwhile by another request: that one did the rest.
    if (!deleted) throw computerNotFound(computerId);
    logSecurityEvent('computer.deleted', securityActorOf(principal), { computerId: computer.id });
    this.authenticator.forgetComputerToken(computer.agentTokenHash);
    if (computer.provider === BYOM) return;
    // Its agent may run on another instance: that one stops it at its next look at the computers.
    if (computer.provider === LOCAL_PROVIDER) await this.agents.stop(computer.id);
    // The computer is gone either way; a workspace that cannot be removed is the operator's to clean up.
    await this.provider
      .teardown(computer.id)
      .catch((error: Error) => this.logger.error(`Could not remove the workspace of deleted computer ${computer.id}: ${error.message}`));
  }
}

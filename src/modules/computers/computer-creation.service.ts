import { Injectable } from '@nestjs/common';
import { Principal, securityActorOf } from '../auth';
import { newId } from '../../platform/database/ids';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { AgentTokens } from './agent-tokens.service';
import { ComputerCreationPolicy } from './computer-creation-policy.service';
import { ComputerViews } from './computer-views.service';
import { ComputerTrigger, nextStatus } from './domain/computer-status';
import { CreateComputerInput, newComputer, newStep } from './domain/new-computer';
import { planSteps } from './domain/provisioning-step';
import { ComputerView } from './domain/views';
import { ProvisioningJob } from './jobs/provisioning.job';
import { NewComputerStore } from './new-computer-store.service';

/**
 * Creates computers: registers a BYOM machine (active at once) or creates a managed one (provisioning,
 * its steps run by the provisioning job). The answer carries the agent token, this once.
 */
@Injectable()
export class ComputerCreation {
  constructor(
    private readonly policy: ComputerCreationPolicy,
    private readonly tokens: AgentTokens,
    private readonly store: NewComputerStore,
    private readonly provisioning: ProvisioningJob,
    private readonly views: ComputerViews,
  ) {}

  async create(principal: Principal, input: CreateComputerInput): Promise<ComputerView> {
    const { managed, owner, repos, autoInstallDeps } = await this.policy.admit(principal, input);
    const id = newId();
    const token = this.tokens.issue(input.provider, id);
    const now = new Date();
    const computer = newComputer(id, principal, owner, input, token, {
      managed,
      repos,
      autoInstallDeps,
      status: nextStatus(managed ? ComputerTrigger.ManagedCreated : ComputerTrigger.ByomRegistered, null)!,
      createdAt: now,
      updatedAt: now,
    });
    const steps = managed ? planSteps({ repos, autoInstallDeps }).map((stepId, position) => newStep(id, stepId, position)) : [];
    await this.store.store(principal, computer, steps);
    const actor = securityActorOf(principal);
    logSecurityEvent('computer.created', actor, { computerId: computer.id, provider: computer.provider });
    logSecurityEvent('computer.agent_token.issued', actor, { computerId: computer.id });
    if (steps.length > 0) this.provisioning.wake();
    return { ...this.views.view(computer, steps, 'create'), agentToken: token.token };
  }
}

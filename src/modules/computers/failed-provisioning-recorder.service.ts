import { Injectable } from '@nestjs/common';
import { Principal, securityActorOf } from '../auth';
import { ServerLogs } from '../sessions';
import { newId } from '../../platform/database/ids';
import { validationError } from '../../platform/http/validation';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { AgentTokens } from './agent-tokens.service';
import { ComputerCreationPolicy } from './computer-creation-policy.service';
import { ComputerViews } from './computer-views.service';
import { BYOM } from './domain/computer';
import { ComputerTrigger, nextStatus } from './domain/computer-status';
import { CreateComputerInput, newComputer, newStep } from './domain/new-computer';
import { planSteps, StepId, StepStatus } from './domain/provisioning-step';
import { ComputerView } from './domain/views';
import { NewComputerStore } from './new-computer-store.service';

/** Steps of a recorded failure are this far apart. */
const STEP_MS = 4_000;

/**
 * Records a managed computer whose provisioning already ran and failed (the demo's): steps before
 * the failed one completed, later ones never ran, the log says so, the computer is in `error`.
 * Nothing is provisioned now; retrying it provisions it for real.
 */
@Injectable()
export class FailedProvisioningRecorder {
  constructor(
    private readonly policy: ComputerCreationPolicy,
    private readonly tokens: AgentTokens,
    private readonly store: NewComputerStore,
    private readonly logs: ServerLogs,
    private readonly views: ComputerViews,
  ) {}

  async record(principal: Principal, input: CreateComputerInput & { failedStep: StepId; error: string; startedAt: Date }): Promise<ComputerView> {
    const { errors, repos = [] } = this.policy.checkModeFields(input, true);
    if (input.provider === BYOM) errors.push({ field: 'provider', message: 'a byom computer has no provisioning to fail' });
    if (errors.length > 0) throw validationError(errors);
    const owner = await this.policy.ownerOf(principal, input.serviceAccountId);
    const planned = planSteps({ repos, autoInstallDeps: input.autoInstallDeps ?? false });
    const failedAt = planned.indexOf(input.failedStep);
    if (failedAt < 0) throw validationError([{ field: 'failedStep', message: `is not a step of this computer (${planned.join(', ')})` }]);
    const at = (step: number) => new Date(input.startedAt.getTime() + step * STEP_MS);
    const id = newId();
    const computer = newComputer(id, principal, owner, input, this.tokens.issue(input.provider, id), {
      managed: true,
      repos,
      autoInstallDeps: input.autoInstallDeps ?? false,
      status: nextStatus(ComputerTrigger.StepFailed, nextStatus(ComputerTrigger.ManagedCreated, null))!,
      createdAt: input.startedAt,
      updatedAt: at(failedAt + 1),
    });
    const steps = planned.map((stepId, position) => {
      const ran = position <= failedAt;
      return newStep(id, stepId, position, {
        status: position < failedAt ? StepStatus.Completed : position === failedAt ? StepStatus.Failed : StepStatus.Pending,
        error: position === failedAt ? input.error : null,
        startedAt: ran ? at(position) : null,
        completedAt: ran ? at(position + 1) : null,
        attempts: ran ? 1 : 0,
      });
    });
    const log = (await this.store.store(principal, computer, steps))!;
    for (const stepId of planned.slice(0, failedAt + 1)) {
      await this.logs.append(computer.organizationId, log, `Step ${stepId} started (attempt 1).`);
      await this.logs.append(computer.organizationId, log, stepId === input.failedStep ? `Step ${stepId} failed: ${input.error}` : `Step ${stepId} completed.`);
    }
    logSecurityEvent('computer.created', securityActorOf(principal), { computerId: computer.id, provider: computer.provider });
    return this.views.withSteps(computer, 'full');
  }
}

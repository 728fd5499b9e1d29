import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { isAdmin, Principal } from '../auth';
import { ServerDetails } from '../../platform/http/server-details';
import { ComputerAccess } from './computer-access.service';
import { ComputersRepository } from './computers.repository';
import { ComputerShape, ComputerView, toComputerView } from './domain/views';
import { ComputerEntity, ProvisioningStepEntity } from './entities';

/** Reads computers as the API shows them: the list, one computer, and the view every other answer carries. */
@Injectable()
export class ComputerViews {
  private readonly details: ServerDetails;

  constructor(
    private readonly repository: ComputersRepository,
    private readonly access: ComputerAccess,
    private readonly config: AppConfig,
  ) {
    this.details = new ServerDetails(config);
  }

  async list(principal: Principal): Promise<ComputerView[]> {
    const computers = await this.repository.list(principal.organizationId, isAdmin(principal.role) ? undefined : principal.userId);
    const steps = await this.repository.stepsOf(
      principal.organizationId,
      computers.map((c) => c.id),
    );
    return computers.map((computer) => this.view(computer, steps.get(computer.id)!, 'list'));
  }

  async get(principal: Principal, computerId: string): Promise<ComputerView> {
    return this.withSteps(await this.access.visible(principal, computerId), 'full');
  }

  /** The computer's view with its provisioning steps as stored now. */
  async withSteps(computer: ComputerEntity, shape: ComputerShape): Promise<ComputerView> {
    return this.view(computer, (await this.repository.stepsOf(computer.organizationId, [computer.id])).get(computer.id)!, shape);
  }

  view(computer: ComputerEntity, steps: ProvisioningStepEntity[], shape: ComputerShape): ComputerView {
    const base = this.config.baseUrl;
    const view = toComputerView(computer, steps, { agentUrl: `${base}/api/v0/agent`, clientUrl: `${base}/api/v0/sessions?computerId=${computer.id}` }, shape);
    // A managed computer's repos lie in the server's COMPUTERS_DIR: named, never shown.
    if (view.clonedRepoDirectories) view.clonedRepoDirectories = view.clonedRepoDirectories.map((directory) => this.details.redact(directory));
    return view;
  }
}

import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Principal } from '../modules/auth';
import { ComputersService } from '../modules/computers';

/**
 * Demo computers for acme: a BYOM laptop (active at once) and a managed workspace that the local
 * provider really provisions. Only an organization without computers gets them.
 */
@Injectable()
export class DemoComputers {
  constructor(private readonly computers: ComputersService) {}

  /** The agent tokens of the computers it created, by computer name (empty when it created none). */
  async seedAcme(people: { owner: Principal; member: Principal }): Promise<Record<string, string>> {
    if ((await this.computers.list(people.owner)).length > 0) return {};
    const laptop = await this.computers.create(people.owner, { name: "Olivia's laptop", provider: 'byom', hostId: randomUUID(), remoteUser: 'olivia' });
    const workspace = await this.computers.create(people.member, {
      name: "Mia's workspace",
      provider: 'local',
      source: { kind: 'template', templateId: 'blank' },
    });
    return { [laptop.name]: laptop.agentToken!, [workspace.name]: workspace.agentToken! };
  }
}

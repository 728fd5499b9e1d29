import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Principal } from '../modules/auth';
import { Authenticator } from '../modules/auth/authenticator';
import { ComputersService, StepId } from '../modules/computers';
import { DemoConversations } from './demo-conversations';

const DAY_MS = 86_400_000;

/**
 * Demo computers for acme, one of each kind of state:
 * - Olivia's laptop: BYOM, active, its agent connected (it reported its hostname);
 * - the build server: BYOM, active, but its agent never connected, so work sent to it waits (and says so);
 * - Mia's workspace: managed (`local`), provisioned for real at seed time, its agent run by the server;
 * - the legacy monolith: managed, its provisioning failed three days ago at cloning, with the reason (recorded, not run).
 * Only an organization without computers gets them.
 */
@Injectable()
export class DemoComputers {
  constructor(
    private readonly computers: ComputersService,
    private readonly conversations: DemoConversations,
    private readonly authenticator: Authenticator,
  ) {}

  /** The agent tokens of the computers it created, by computer name (empty when it created none). */
  async seedAcme(people: { owner: Principal; manager: Principal; member: Principal }): Promise<Record<string, string>> {
    if ((await this.computers.list(people.owner)).length > 0) return {};
    const laptop = await this.computers.create(people.owner, { name: "Olivia's laptop", provider: 'byom', hostId: randomUUID(), remoteUser: 'olivia' });
    await this.computers.connectAgent(await this.authenticator.authenticate(`Bearer ${laptop.agentToken!}`), { hostname: 'olivia-mbp.acme.example' });

    const buildServer = await this.computers.create(people.manager, { name: 'Build server', provider: 'byom', hostId: randomUUID(), remoteUser: 'ci' });
    await this.conversations.seedUnanswered(
      people.manager,
      buildServer.id,
      'Bump the Node version on the build server',
      'Move the build server to Node 22 and check that the nightly build still passes.',
    );

    const workspace = await this.computers.create(people.member, {
      name: "Mia's workspace",
      provider: 'local',
      source: { kind: 'template', templateId: 'blank' },
    });

    await this.computers.recordFailedProvisioning(people.manager, {
      name: 'Legacy monolith',
      provider: 'local',
      repos: ['https://github.com/acme/legacy-monolith'],
      autoInstallDeps: true,
      failedStep: StepId.CloneRepos,
      error:
        "git clone failed (exit 128): remote: Repository not found.\nfatal: repository 'https://github.com/acme/legacy-monolith/' not found " +
        '(a private repository: give the server read access, then retry the computer)',
      startedAt: new Date(Date.now() - 3 * DAY_MS),
    });
    return {
      [laptop.name]: laptop.agentToken!,
      [buildServer.name]: buildServer.agentToken!,
      [workspace.name]: workspace.agentToken!,
    };
  }
}

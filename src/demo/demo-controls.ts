import { Injectable } from '@nestjs/common';
import { Principal } from '../modules/auth';
import { EnterpriseControlsService } from '../modules/enterprise-controls';

/**
 * A short history of acme's enterprise controls, as two admins would build it up: each step is a
 * real change through the service, so it is validated, revisioned and encrypted like any other.
 * Only an organization whose controls were never changed gets it.
 */
@Injectable()
export class DemoControls {
  constructor(private readonly controls: EnterpriseControlsService) {}

  async seedAcme(people: { owner: Principal; manager: Principal }): Promise<void> {
    if ((await this.controls.current(people.owner)).revision > 0) return;
    const steps: Array<[Principal, Record<string, unknown>]> = [
      [people.owner, { restrictApiKeyCreationToManagers: true, sessionDefaultSettings: { model: 'model-a', specModeModel: 'model-b' } }],
      [
        people.manager,
        {
          commandBlocklist: ['rm -rf /', 'curl * | sh'],
          commandDenylist: ['git push --force'],
          sandbox: { enabled: true, filesystem: { denyRead: ['~/.ssh', '~/.aws'] }, network: { allowedDomains: ['github.com', '*.npmjs.org'] } },
        },
      ],
      [
        people.owner,
        {
          customModels: [
            {
              id: 'custom:acme-llama',
              model: 'llama-3.1-70b-instruct',
              baseUrl: 'https://llm.acme.example/v1',
              apiKey: 'sk-acme-demo-4f1c9a27e8b3-7d2e',
              displayName: 'Acme Llama',
            },
          ],
          modelPolicy: { allowedBaseUrls: ['https://llm.acme.example'], blockedModelIds: ['model-legacy'] },
        },
      ],
      [people.manager, { sessionRetentionDays: 365, mcpPolicy: { allowlist: ['github', 'linear'] } }],
    ];
    for (const [admin, settings] of steps) await this.controls.change(admin, settings);
  }
}

import { Injectable, Logger } from '@nestjs/common';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppConfig } from '../config/app-config';
import { AnalyticsRollupJob } from '../modules/analytics';
import { ApiKeysService, OrganizationsService, Principal, Role } from '../modules/auth';
import { Authenticator } from '../modules/auth/authenticator';
import { DemoComputers } from './demo-computers';
import { DemoControls } from './demo-controls';
import { DemoReadiness } from './demo-readiness';
import { DemoConversations } from './demo-conversations';
import { DemoHistory } from './demo-history';

interface DemoOrganization {
  slug: string;
  name: string;
  messageHistory: boolean;
  users: Array<{ role: Role; email: string; name: string }>;
}

export const DEMO_ORGANIZATIONS: DemoOrganization[] = [
  {
    slug: 'acme',
    name: 'Acme Corporation',
    messageHistory: true,
    users: [
      { role: Role.Owner, email: 'olivia.owner@acme.example', name: 'Olivia Owner' },
      { role: Role.Manager, email: 'max.manager@acme.example', name: 'Max Manager' },
      { role: Role.Member, email: 'mia.member@acme.example', name: 'Mia Member' },
      { role: Role.Guest, email: 'gus.guest@acme.example', name: 'Gus Guest' },
    ],
  },
  {
    slug: 'globex',
    name: 'Globex Industries',
    messageHistory: false,
    users: [
      { role: Role.Owner, email: 'hank.owner@globex.example', name: 'Hank Owner' },
      { role: Role.Member, email: 'gina.member@globex.example', name: 'Gina Member' },
    ],
  },
];

export type DemoKeys = Record<string, { orgId: string } & Partial<Record<Role, string>>>;

export const DEMO_KEYS_FILE = 'demo-keys.json';
/** The demo computers' agent tokens, written when they are created (tokens are shown only once). */
export const DEMO_AGENT_TOKENS_FILE = 'demo-agent-tokens.json';

/**
 * Seeds the demo organizations, idempotently: existing organizations and users are kept, and a
 * key already in demo-keys.json is reused while it still works, so a second run changes nothing.
 */
@Injectable()
export class DemoSeeder {
  private readonly logger = new Logger(DemoSeeder.name);

  constructor(
    private readonly config: AppConfig,
    private readonly organizations: OrganizationsService,
    private readonly apiKeys: ApiKeysService,
    private readonly authenticator: Authenticator,
    private readonly conversations: DemoConversations,
    private readonly computers: DemoComputers,
    private readonly controls: DemoControls,
    private readonly readiness: DemoReadiness,
    private readonly history: DemoHistory,
    private readonly rollup: AnalyticsRollupJob,
  ) {}

  async seed(): Promise<DemoKeys> {
    const path = join(this.config.dataDir, DEMO_KEYS_FILE);
    const previous = await this.readKeys(path);
    const keys: DemoKeys = {};
    for (const demo of DEMO_ORGANIZATIONS) {
      const organization = await this.organizations.ensureOrganization({ slug: demo.slug, name: demo.name });
      await this.organizations.setFeature(demo.slug, 'messageHistory', demo.messageHistory);
      const entry: DemoKeys[string] = { orgId: organization.id };
      for (const person of demo.users) {
        const user = await this.organizations.ensureUser(demo.slug, person);
        const kept = previous[demo.slug]?.[person.role];
        entry[person.role] =
          kept && (await this.stillActsAs(kept, user.id))
            ? kept
            : (await this.apiKeys.create({ organizationId: organization.id, userId: user.id, name: 'demo' })).key;
      }
      keys[demo.slug] = entry;
    }
    const as = (org: string, role: Role) => this.authenticator.authenticate(`Bearer ${keys[org][role]}`);
    const [tokens] = await Promise.all([this.seedWork(as), this.readiness.seedAcme(await as('acme', Role.Manager))]);
    await mkdir(this.config.dataDir, { recursive: true });
    if (Object.keys(tokens).length > 0) {
      await writeFile(join(this.config.dataDir, DEMO_AGENT_TOKENS_FILE), JSON.stringify(tokens, null, 2) + '\n', { mode: 0o600 });
    }
    await writeFile(path, JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
    this.logger.log(`Demo organizations ready; their API keys are in ${path}`);
    return keys;
  }

  /** Conversations, history, computers and controls, in this order; the computers' agent tokens. */
  private async seedWork(as: (org: string, role: Role) => Promise<Principal>): Promise<Record<string, string>> {
    await this.conversations.seedAcme({
      owner: await as('acme', Role.Owner),
      manager: await as('acme', Role.Manager),
      member: await as('acme', Role.Member),
    });
    await this.conversations.seedGlobex({ owner: await as('globex', Role.Owner) });
    // After today's conversations (they go only where there are no sessions): past work, then its rollup.
    const imported = await this.history.seedAcme({
      owner: await as('acme', Role.Owner),
      manager: await as('acme', Role.Manager),
      member: await as('acme', Role.Member),
      guest: await as('acme', Role.Guest),
    });
    if (imported > 0) this.logger.log(`Demo history: ${imported} past sessions`);
    await this.rollup.runNow();
    // After the conversations: a managed computer's provisioning log is a session, and conversations go only where there are none.
    const tokens = await this.computers.seedAcme({ owner: await as('acme', Role.Owner), manager: await as('acme', Role.Manager), member: await as('acme', Role.Member) });
    // Last: the controls' model policy and defaults apply to sessions created after them.
    await this.controls.seedAcme({ owner: await as('acme', Role.Owner), manager: await as('acme', Role.Manager) });
    return tokens;
  }

  private async readKeys(path: string): Promise<DemoKeys> {
    try {
      return JSON.parse(await readFile(path, 'utf8')) as DemoKeys;
    } catch {
      return {};
    }
  }

  private async stillActsAs(key: string, userId: string): Promise<boolean> {
    try {
      return (await this.authenticator.authenticate(`Bearer ${key}`)).userId === userId;
    } catch {
      return false;
    }
  }
}

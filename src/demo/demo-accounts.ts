import { Injectable } from '@nestjs/common';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppConfig } from '../config/app-config';
import { ApiKeysService, OrganizationsService, Role } from '../modules/auth';
import { Authenticator } from '../modules/auth/authenticator';
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

/**
 * The demo organizations, their people and an API key for each, idempotently: existing organizations
 * and users are kept, and a key already in demo-keys.json is reused while it still works.
 */
@Injectable()
export class DemoAccounts {
  constructor(
    private readonly config: AppConfig,
    private readonly organizations: OrganizationsService,
    private readonly apiKeys: ApiKeysService,
    private readonly authenticator: Authenticator,
  ) {}

  async ensure(): Promise<DemoKeys> {
    const previous = await this.readKeys(join(this.config.dataDir, DEMO_KEYS_FILE));
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
    return keys;
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

import { Injectable, Logger } from '@nestjs/common';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppConfig } from '../../config/app-config';
import { newId } from '../../platform/database/ids';
import { EventLog } from '../../platform/events';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { SecretBox } from '../../platform/secrets/secret-box';
import { ApiKeysService, CreatedApiKey } from './api-keys.service';
import { AuthRepository } from './auth.repository';
import { AuthError, AuthErrorCode, setupDone } from './domain/auth.errors';
import { ActingAs } from './domain/principal';
import { Role } from './domain/role';
import { UserKind } from './domain/user-kind';
import { SetupInput } from './schemas/auth.schemas';
import { OrganizationEntity, UserEntity } from './entities';

/** The first run's organization and owner, from `POST /api/v0/setup` (SetupBody) or the operator's CLI. */
export type FirstRunInput = Omit<SetupInput, 'setupToken'>;

export interface FirstRun {
  organization: OrganizationEntity;
  owner: UserEntity;
  apiKey: CreatedApiKey;
}

/**
 * The first run: on a database with no organization, the server prints a setup token at start, and
 * whoever holds it makes the first organization and its owner (and gets the owner's first key, once).
 * The token is derived from SECRETS_KEY, so every instance prints the same one and any of them
 * accepts it; it stops working as soon as an organization exists.
 */
@Injectable()
export class SetupService {
  private readonly logger = new Logger('FirstRun');
  private derived?: string;

  constructor(
    private readonly repository: AuthRepository,
    private readonly apiKeys: ApiKeysService,
    private readonly config: AppConfig,
    private readonly events: EventLog,
  ) {}

  /** Derived when first needed: the CLI, which never uses it, runs without SECRETS_KEY on PostgreSQL. */
  private get token(): string {
    const [key] = SecretBox.loadKeys(this.config);
    this.derived ??= `setup_${createHmac('sha256', key.material).update('agent-platform first-run setup v1').digest('base64url')}`;
    return this.derived;
  }

  async needed(): Promise<boolean> {
    return (await this.repository.organizationCount()) === 0;
  }

  /** At start: on an empty database, says how to finish the setup (the token is in this line only). */
  async announce(baseUrl: string): Promise<void> {
    if (!(await this.needed())) return;
    this.logger.warn(
      `No organization yet. Make the first one and its owner with the setup token ${this.token} : ` +
        `POST ${baseUrl}/api/v0/setup {"setupToken": "...", "organization": {"slug": "acme", "name": "Acme"}, "owner": {"email": "you@acme.example", "name": "You"}} ` +
        '(see /docs), or `npm run cli -- setup acme Acme you@acme.example "You"`. The answer holds the owner\'s API key, once.',
    );
  }

  /** Through the API: the token must match. */
  async completeWithToken(token: string, input: FirstRunInput): Promise<FirstRun> {
    const given = Buffer.from(token);
    const expected = Buffer.from(this.token);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new AuthError(AuthErrorCode.SetupInvalidToken, 'The setup token is not the one this server printed at start.');
    }
    return this.complete(input, 'setup-token');
  }

  /** The first organization, its owner and the owner's first key, in one transaction; 409 once any organization exists. */
  async complete(input: FirstRunInput, by: 'setup-token' | 'operator'): Promise<FirstRun> {
    // The setup token is printed for the operator: whoever uses it acts as the operator.
    const acting: ActingAs = { security: { credentialId: by }, event: { kind: 'operator', credential: by === 'operator' ? 'cli' : 'setup_token' } };
    const { organization, owner } = await this.repository.transaction(async (manager) => {
      await this.repository.lockFirstRun(manager);
      if ((await this.repository.organizationCount(manager)) > 0) {
        throw setupDone();
      }
      const organization = await this.repository.insertOrganization(
        { id: newId(), slug: input.organization.slug, name: input.organization.name, features: {} },
        manager,
      );
      const owner = await this.repository.insertUser(
        { id: newId(), organizationId: organization.id, email: input.owner.email, name: input.owner.name, role: Role.Owner, kind: UserKind.Human },
        manager,
      );
      this.events.raise(manager, {
        type: 'member.changed',
        organizationId: organization.id,
        actor: acting.event,
        data: { userId: owner.id, email: owner.email, name: owner.name, role: owner.role, kind: owner.kind, change: 'added' },
      });
      return { organization, owner };
    });
    const apiKey = await this.apiKeys.create({ organizationId: organization.id, userId: owner.id, name: 'first run' }, new Date(), acting);
    logSecurityEvent('setup.completed', { organizationId: organization.id, credentialId: by }, { ownerId: owner.id });
    return { organization, owner, apiKey };
  }
}

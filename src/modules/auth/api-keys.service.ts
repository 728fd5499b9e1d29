import { Injectable } from '@nestjs/common';
import { isUuid, newId } from '../../platform/database/ids';
import { Page } from '../../platform/http/pagination';
import { validationError } from '../../platform/http/validation';
import { EventLog } from '../../platform/events';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { AuthRepository } from './auth.repository';
import { CredentialCache } from './credential-cache';
import { generateApiKey } from './domain/api-key-secret';
import { apiKeyCreationRestricted, apiKeyNotFound, AuthError, AuthErrorCode, listingEveryKeyRefused } from './domain/auth.errors';
import { ActingAs, actingAs, OPERATOR, Principal, securityActorOf } from './domain/principal';
import { isAdmin } from './domain/role';
import { ApiKeyEntity } from './entities';
import { OrganizationControlsReader } from './contracts/organization-controls-reader';

export interface CreatedApiKey {
  entity: ApiKeyEntity;
  key: string;
}

@Injectable()
export class ApiKeysService {
  constructor(
    private readonly repository: AuthRepository,
    private readonly controls: OrganizationControlsReader,
    private readonly credentials: CredentialCache,
    private readonly events: EventLog,
  ) {}

  /** Whether the caller may create keys now: always owners and managers; others unless the organization restricts it. */
  async mayCreate(principal: Principal): Promise<boolean> {
    if (isAdmin(principal.role)) return true;
    return !(await this.controls.read(principal.organizationId)).restrictApiKeyCreationToManagers;
  }

  /** Creates a key for the caller, unless the organization restricts creation to managers. */
  async createForCaller(principal: Principal, input: { name: string; expiresAt?: Date }, now = new Date()): Promise<CreatedApiKey> {
    if (!(await this.mayCreate(principal))) {
      throw apiKeyCreationRestricted();
    }
    return this.create({ organizationId: principal.organizationId, userId: principal.userId, ...input }, now, actingAs(principal));
  }

  /** Creates a key for any user; operators reach this through the CLI (`by` names the caller otherwise). */
  async create(
    input: { organizationId: string; userId: string; name: string; expiresAt?: Date },
    now = new Date(),
    by: ActingAs = OPERATOR,
  ): Promise<CreatedApiKey> {
    if (input.expiresAt && input.expiresAt <= now) {
      throw validationError([{ field: 'expiresAt', message: 'must be in the future' }]);
    }
    const { key, prefix, hash } = generateApiKey();
    const entity = await this.repository.transaction(async (manager) => {
      const entity = await this.repository.insertApiKey(
        {
          id: newId(),
          organizationId: input.organizationId,
          userId: input.userId,
          name: input.name,
          prefix,
          keyHash: hash,
          expiresAt: input.expiresAt ?? null,
        },
        manager,
      );
      this.events.raise(manager, {
        type: 'api_key.created',
        organizationId: input.organizationId,
        actor: by.event,
        data: { apiKeyId: entity.id, userId: entity.userId, name: entity.name, prefix: entity.prefix, expiresAt: entity.expiresAt?.getTime() ?? null },
      });
      return entity;
    });
    logSecurityEvent('api_key.created', { organizationId: input.organizationId, ...by.security }, { apiKeyId: entity.id, keyUserId: input.userId });
    return { entity, key };
  }

  list(principal: Principal, scope: 'own' | 'organization', cursor: string | undefined, limit: number): Promise<Page<ApiKeyEntity>> {
    if (scope === 'organization' && !isAdmin(principal.role)) {
      throw listingEveryKeyRefused();
    }
    const userId = scope === 'organization' ? undefined : principal.userId;
    return this.repository.listApiKeys({ organizationId: principal.organizationId, userId }, cursor, limit);
  }

  /** The organization's keys (or one user's), for the operator. */
  listOf(organizationId: string, userId: string | undefined, cursor: string | undefined, limit: number): Promise<Page<ApiKeyEntity>> {
    return this.repository.listApiKeys({ organizationId, userId }, cursor, limit);
  }

  /** Users revoke their own keys; owners and managers may revoke any key of their organization. */
  async revoke(principal: Principal, id: string, now = new Date()): Promise<ApiKeyEntity> {
    const key = isUuid(id) ? await this.repository.findApiKey(id, principal.organizationId) : null;
    if (!key || (key.userId !== principal.userId && !isAdmin(principal.role))) {
      throw apiKeyNotFound(id);
    }
    const revoked = (await this.revokeIn(key, now, actingAs(principal))) ?? key;
    this.credentials.forget(revoked.keyHash);
    logSecurityEvent('api_key.revoked', securityActorOf(principal), { apiKeyId: key.id, keyUserId: key.userId });
    return revoked;
  }

  /** Revocation by an operator, who knows the key's id (CLI). */
  async revokeById(id: string, now = new Date()): Promise<ApiKeyEntity> {
    const key = isUuid(id) ? await this.revokeIn({ id }, now, OPERATOR) : null;
    if (!key) throw new AuthError(AuthErrorCode.ApiKeyNotFound, `No API key ${id} exists.`);
    this.credentials.forget(key.keyHash);
    logSecurityEvent('api_key.revoked', { organizationId: key.organizationId, ...OPERATOR.security }, { apiKeyId: key.id, keyUserId: key.userId });
    return key;
  }

  /** Revokes the key once (revoking again keeps the first time, and raises nothing). */
  private revokeIn(which: { organizationId?: string; id: string }, now: Date, by: ActingAs): Promise<ApiKeyEntity | null> {
    return this.repository.transaction(async (manager) => {
      const key = await this.repository.revokeApiKey(which, now, manager);
      if (key && key.revokedAt?.getTime() === now.getTime()) {
        this.events.raise(manager, {
          type: 'api_key.revoked',
          organizationId: key.organizationId,
          actor: by.event,
          data: { apiKeyId: key.id, userId: key.userId, name: key.name, prefix: key.prefix },
        });
      }
      return key;
    });
  }
}

import { Injectable } from '@nestjs/common';
import { isUuid, newId } from '../../platform/database/ids';
import { Page } from '../../platform/http/pagination';
import { EntityManager } from 'typeorm';
import { EventLog } from '../../platform/events';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { ApiKeysService, CreatedApiKey } from './api-keys.service';
import { AuthRepository } from './auth.repository';
import { CredentialCache } from './credential-cache';
import { AuthError, AuthErrorCode, lastOwner, serviceAccountNotFound, userNotFound } from './domain/auth.errors';
import { ActingAs, actingAs, Principal } from './domain/principal';
import { rankOf, Role } from './domain/role';
import { UserKind } from './domain/user-kind';
import { UserEntity } from './entities';

/**
 * Who changes the members: an owner or manager through the API (bounded by their role), or the
 * operator at the command line (bounded by nothing but the last owner).
 */
export interface MembersActor {
  organizationId: string;
  /** The highest role the actor may grant, change or remove; null: any (the operator). */
  role: Role | null;
  by: ActingAs;
}

export function actorOf(principal: Principal): MembersActor {
  return { organizationId: principal.organizationId, role: principal.role, by: actingAs(principal) };
}

/**
 * The organization's users and service accounts: list, add, change the role of, remove. Nobody
 * reaches above their own role, and an organization always keeps an owner. A removed user keeps
 * their row (what they made stays) with every key revoked; adding the address again brings them back.
 */
@Injectable()
export class MembersService {
  constructor(
    private readonly repository: AuthRepository,
    private readonly apiKeys: ApiKeysService,
    private readonly credentials: CredentialCache,
    private readonly events: EventLog,
  ) {}

  list(organizationId: string, kind: UserKind | undefined, cursor: string | undefined, limit: number): Promise<Page<UserEntity>> {
    return this.repository.listMembers(organizationId, kind, cursor, limit);
  }

  /**
   * The email of each of these users of the organization, removed ones included (what they did still names them);
   * ids that name no user are absent. Other modules name users by id; this is where they find the address. With
   * `manager`, read in the caller's transaction.
   */
  emailsOf(organizationId: string, userIds: readonly string[], manager?: EntityManager): Promise<Map<string, string>> {
    return this.repository.emailsOf(organizationId, userIds.filter(isUuid), manager);
  }

  async add(actor: MembersActor, input: { email: string; name: string; role: Role; kind: UserKind }): Promise<UserEntity> {
    this.mayGrant(actor, input.role);
    const email = input.email.toLowerCase();
    const user = await this.repository.transaction(async (manager) => {
      await this.repository.lockMembers(manager, actor.organizationId);
      const existing = await this.repository.findUserByEmail(actor.organizationId, email, manager);
      if (existing && existing.removedAt === null)
        throw new AuthError(AuthErrorCode.UserExists, `${email} is already a user of your organization.`, { userId: existing.id });
      if (existing) {
        const restored = { name: input.name, role: input.role, kind: input.kind, removedAt: null };
        await this.repository.updateMember(manager, existing, restored);
        return this.raiseChanged(manager, actor, Object.assign(existing, restored), 'added');
      }
      const user = await this.repository.insertUser(
        { id: newId(), organizationId: actor.organizationId, email, name: input.name, role: input.role, kind: input.kind },
        manager,
      );
      return this.raiseChanged(manager, actor, user, 'added');
    });
    logSecurityEvent('member.added', { organizationId: actor.organizationId, ...actor.by.security }, { memberId: user.id, role: user.role, kind: user.kind });
    return user;
  }

  async change(actor: MembersActor, userId: string, changes: { role?: Role; name?: string }): Promise<UserEntity> {
    if (changes.role !== undefined) this.mayGrant(actor, changes.role);
    const user = await this.repository.transaction(async (manager) => {
      await this.repository.lockMembers(manager, actor.organizationId);
      const target = await this.requireMember(actor, userId, manager);
      this.mayReach(actor, target);
      if (target.role === Role.Owner && changes.role !== undefined && changes.role !== Role.Owner) await this.keepAnOwner(manager, actor.organizationId);
      await this.repository.updateMember(manager, target, changes);
      return this.raiseChanged(manager, actor, Object.assign(target, changes), 'updated');
    });
    this.forgetCallers(user.id, actor.organizationId, []);
    logSecurityEvent('member.changed', { organizationId: actor.organizationId, ...actor.by.security }, { memberId: user.id, role: user.role });
    return user;
  }

  /** Removes the user and revokes every key of theirs, at once on this instance. */
  async remove(actor: MembersActor, userId: string, now = new Date()): Promise<UserEntity> {
    const { user, hashes } = await this.repository.transaction(async (manager) => {
      await this.repository.lockMembers(manager, actor.organizationId);
      const target = await this.requireMember(actor, userId, manager);
      this.mayReach(actor, target);
      if (target.role === Role.Owner) await this.keepAnOwner(manager, actor.organizationId);
      await this.repository.updateMember(manager, target, { removedAt: now });
      const user = this.raiseChanged(manager, actor, Object.assign(target, { removedAt: now }), 'removed');
      return { user, hashes: await this.repository.revokeKeysOf(manager, target, now) };
    });
    this.forgetCallers(user.id, actor.organizationId, hashes);
    logSecurityEvent('member.removed', { organizationId: actor.organizationId, ...actor.by.security }, { memberId: user.id, revokedKeys: hashes.length });
    return user;
  }

  /** A key for a service account, shown once: people create their own keys. */
  async createServiceAccountKey(actor: MembersActor, userId: string, input: { name: string; expiresAt?: Date }): Promise<CreatedApiKey> {
    const target = isUuid(userId) ? await this.repository.findMember(actor.organizationId, userId.toLowerCase()) : null;
    if (!target || target.kind !== UserKind.ServiceAccount) {
      throw serviceAccountNotFound(userId);
    }
    this.mayReach(actor, target);
    return this.apiKeys.create({ organizationId: actor.organizationId, userId: target.id, ...input }, new Date(), actor.by);
  }

  private raiseChanged(manager: EntityManager, actor: MembersActor, user: UserEntity, change: 'added' | 'updated' | 'removed'): UserEntity {
    this.events.raise(manager, {
      type: 'member.changed',
      organizationId: actor.organizationId,
      actor: actor.by.event,
      data: { userId: user.id, email: user.email, name: user.name, role: user.role, kind: user.kind, change },
    });
    return user;
  }

  private async requireMember(actor: MembersActor, userId: string, manager: Parameters<AuthRepository['findMember']>[2]): Promise<UserEntity> {
    const user = isUuid(userId) ? await this.repository.findMember(actor.organizationId, userId.toLowerCase(), manager) : null;
    if (!user) throw userNotFound(userId);
    return user;
  }

  private mayGrant(actor: MembersActor, role: Role): void {
    if (actor.role !== null && rankOf(role) > rankOf(actor.role)) {
      throw new AuthError(AuthErrorCode.RoleAboveYours, `You are a ${actor.role}: you cannot give anyone the ${role} role.`, { role, yourRole: actor.role });
    }
  }

  private mayReach(actor: MembersActor, target: UserEntity): void {
    if (actor.role !== null && rankOf(target.role) > rankOf(actor.role)) {
      throw new AuthError(AuthErrorCode.RoleAboveYours, `You are a ${actor.role}: you cannot change or remove a ${target.role}.`, {
        role: target.role,
        yourRole: actor.role,
      });
    }
  }

  private async keepAnOwner(manager: Parameters<AuthRepository['countOwners']>[0], organizationId: string): Promise<void> {
    if ((await this.repository.countOwners(manager, organizationId)) <= 1) {
      throw lastOwner();
    }
  }

  private forgetCallers(userId: string, organizationId: string, keyHashes: string[]): void {
    for (const hash of keyHashes) this.credentials.forget(hash);
    this.credentials.forget(CredentialCache.userKey(userId, organizationId));
  }
}

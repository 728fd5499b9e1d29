import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull } from 'typeorm';
import { AdvisoryLock } from '../../platform/database/advisory-locks';
import { NewestFirst } from '../../platform/database/keyset';
import { Sql } from '../../platform/database/sql';
import { Page, toPage } from '../../platform/http/pagination';
import { Role } from './domain/role';
import { UserKind } from './domain/user-kind';
import { ApiKeyEntity, OrganizationEntity, UserEntity } from './entities';
import { OrganizationFeatures } from './entities/organization.entity';

/** Who is calling, as the credential lookups return it. */
export interface CallerRow {
  api_key_id: string | null;
  revoked_at: Date | null;
  expires_at: Date | null;
  last_used_at: Date | null;
  user_id: string;
  organization_id: string;
  role: Role;
  email: string;
  name: string;
  features: OrganizationFeatures;
  /** Set when the key's user was removed (API keys only: other lookups leave removed users out). */
  user_removed_at?: Date | null;
}

/** An API key row under its entity's property names. */
const API_KEY_COLUMNS = `id, organization_id AS "organizationId", user_id AS "userId", name, prefix, key_hash AS "keyHash", created_at AS "createdAt",
  last_used_at AS "lastUsedAt", expires_at AS "expiresAt", revoked_at AS "revokedAt"`;

/** A user row under its entity's property names. */
const USER_COLUMNS = `id, organization_id AS "organizationId", email, name, role, kind, created_at AS "createdAt", removed_at AS "removedAt"`;

/** API keys are touched at most once a minute, so authentication rarely writes. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** All SQL of the Auth module. */
@Injectable()
export class AuthRepository {
  static readonly apiKeysOrder = new NewestFirst('api-keys');
  static readonly membersOrder = new NewestFirst('members');

  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
  ) {}

  /** Every request's first query: the key, its user and the organization's features, in one statement. */
  async findApiKeyByHash(keyHash: string): Promise<CallerRow | null> {
    const rows = await this.sql.query<CallerRow>(
      'auth.apiKeyByHash',
      `SELECT k.id AS api_key_id, k.revoked_at, k.expires_at, k.last_used_at, u.removed_at AS user_removed_at,
              u.id AS user_id, u.organization_id, u.role, u.email, u.name, o.features
       FROM api_keys k JOIN users u ON u.organization_id = k.organization_id AND u.id = k.user_id JOIN organizations o ON o.id = u.organization_id
       WHERE k.key_hash = $1`,
      [keyHash],
    );
    return rows[0] ?? null;
  }

  async findCaller(userId: string, organizationId: string): Promise<CallerRow | null> {
    const rows = await this.sql.query<CallerRow>(
      'auth.caller',
      `SELECT NULL::uuid AS api_key_id, NULL::timestamptz AS revoked_at, NULL::timestamptz AS expires_at, NULL::timestamptz AS last_used_at,
              u.id AS user_id, u.organization_id, u.role, u.email, u.name, o.features
       FROM users u JOIN organizations o ON o.id = u.organization_id
       WHERE u.id = $1 AND u.organization_id = $2 AND u.removed_at IS NULL`,
      [userId, organizationId],
    );
    return rows[0] ?? null;
  }

  /** Which of these ids are users of the organization (ids must be UUIDs). */
  async usersAmong(organizationId: string, userIds: string[]): Promise<Set<string>> {
    if (userIds.length === 0) return new Set();
    const rows = await this.sql.query<{ id: string }>('auth.usersAmong', 'SELECT id FROM users WHERE organization_id = $1 AND id = ANY($2::uuid[])', [
      organizationId,
      userIds,
    ]);
    return new Set(rows.map((row) => row.id));
  }

  /** The email of each of these users of the organization (ids must be UUIDs), removed ones included. */
  async emailsOf(organizationId: string, userIds: readonly string[], manager?: EntityManager): Promise<Map<string, string>> {
    if (userIds.length === 0) return new Map();
    const rows = await this.sql
      .in(manager)
      .query<{ id: string; email: string }>('auth.emails', 'SELECT id, email FROM users WHERE organization_id = $1 AND id = ANY($2::uuid[])', [
        organizationId,
        [...new Set(userIds)],
      ]);
    return new Map(rows.map((row) => [row.id, row.email]));
  }

  /** Whether `userId` (a UUID) is a service account of the organization. */
  async isServiceAccount(organizationId: string, userId: string): Promise<boolean> {
    const rows = await this.sql.query<{ id: string }>(
      'auth.serviceAccount',
      'SELECT id FROM users WHERE id = $1 AND organization_id = $2 AND kind = $3 AND removed_at IS NULL',
      [userId, organizationId, UserKind.ServiceAccount],
    );
    return rows.length > 0;
  }

  /** Whether a key last used at `lastUsedAt` is due its use recorded (once a minute at most). */
  static touchDue(lastUsedAt: Date | null, now: Date): boolean {
    return !lastUsedAt || now.getTime() - lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS;
  }

  /** Records use of a key at most once a minute; true when it wrote. */
  async touchApiKey(key: { organizationId: string; id: string; lastUsedAt: Date | null }, now: Date): Promise<boolean> {
    if (!AuthRepository.touchDue(key.lastUsedAt, now)) return false;
    await this.sql.query(
      'auth.touchApiKey',
      'UPDATE api_keys SET last_used_at = $2 WHERE organization_id = $4 AND id = $1 AND (last_used_at IS NULL OR last_used_at < $3)',
      [key.id, now, new Date(now.getTime() - LAST_USED_RESOLUTION_MS), key.organizationId],
    );
    return true;
  }

  findUserByEmail(organizationId: string, email: string, manager: EntityManager = this.dataSource.manager): Promise<UserEntity | null> {
    return manager.getRepository(UserEntity).findOneBy({ organizationId, email: email.toLowerCase() });
  }

  findOrganizationBySlug(slug: string, manager: EntityManager = this.dataSource.manager): Promise<OrganizationEntity | null> {
    return manager.getRepository(OrganizationEntity).findOneBy({ slug });
  }

  findOrganization(id: string): Promise<OrganizationEntity | null> {
    return this.dataSource.getRepository(OrganizationEntity).findOneBy({ id });
  }

  async insertOrganization(organization: Omit<OrganizationEntity, 'createdAt'>, manager: EntityManager = this.dataSource.manager): Promise<OrganizationEntity> {
    return manager.getRepository(OrganizationEntity).save(manager.create(OrganizationEntity, organization));
  }

  async insertUser(
    user: { id: string; organizationId: string; email: string; name: string; role: Role; kind: UserKind },
    manager: EntityManager = this.dataSource.manager,
  ): Promise<UserEntity> {
    return manager.getRepository(UserEntity).save(manager.create(UserEntity, { ...user, email: user.email.toLowerCase() }));
  }

  /** Sets one feature flag without touching the others, atomically. */
  async setFeature(organizationId: string, feature: keyof OrganizationFeatures, enabled: boolean): Promise<boolean> {
    const rows = await this.sql.query(
      'auth.setFeature',
      `UPDATE organizations SET features = features || jsonb_build_object($2::text, $3::boolean) WHERE id = $1 RETURNING 1`,
      [organizationId, feature, enabled],
    );
    return rows.length > 0;
  }

  insertApiKey(key: Omit<ApiKeyEntity, 'createdAt' | 'lastUsedAt' | 'revokedAt' | 'user'>, manager: EntityManager): Promise<ApiKeyEntity> {
    const repository = manager.getRepository(ApiKeyEntity);
    return repository.save(repository.create({ ...key, lastUsedAt: null, revokedAt: null }));
  }

  async listApiKeys(filter: { organizationId: string; userId?: string }, cursor: string | undefined, limit: number): Promise<Page<ApiKeyEntity>> {
    const after = AuthRepository.apiKeysOrder.positionOf(cursor);
    const values: unknown[] = [filter.organizationId, limit + 1];
    const conditions = ['organization_id = $1'];
    if (filter.userId) conditions.push(`user_id = $${values.push(filter.userId)}`);
    if (after) conditions.push(`(created_at, id) < ($${values.push(after.createdAt)}, $${values.push(after.id)})`);
    const rows = await this.sql.query<ApiKeyEntity>(
      `auth.apiKeys.list${filter.userId ? '.user' : ''}${after ? '.after' : ''}`,
      `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE ${conditions.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $2`,
      values,
    );
    return toPage(rows, limit, (row) => AuthRepository.apiKeysOrder.cursorOf(row));
  }

  findApiKey(id: string, organizationId: string): Promise<ApiKeyEntity | null> {
    return this.dataSource.getRepository(ApiKeyEntity).findOneBy({ id, organizationId });
  }

  /**
   * Marks the key revoked once; revoking again keeps the first time. An operator names the key by id alone (the
   * CLI), which `api_keys_id_idx` serves.
   */
  async revokeApiKey(key: { organizationId?: string; id: string }, now: Date, manager: EntityManager): Promise<ApiKeyEntity | null> {
    const where = key.organizationId === undefined ? { id: key.id } : { organizationId: key.organizationId, id: key.id };
    await manager.getRepository(ApiKeyEntity).update({ ...where, revokedAt: IsNull() }, { revokedAt: now });
    return manager.getRepository(ApiKeyEntity).findOneBy(where);
  }

  async listMembers(organizationId: string, kind: UserKind | undefined, cursor: string | undefined, limit: number): Promise<Page<UserEntity>> {
    const after = AuthRepository.membersOrder.positionOf(cursor);
    const values: unknown[] = [organizationId, limit + 1];
    const conditions = ['organization_id = $1', 'removed_at IS NULL'];
    if (kind) conditions.push(`kind = $${values.push(kind)}`);
    if (after) conditions.push(`(created_at, id) < ($${values.push(after.createdAt)}, $${values.push(after.id)})`);
    const rows = await this.sql.query<UserEntity>(
      `auth.members.list${kind ? '.kind' : ''}${after ? '.after' : ''}`,
      `SELECT ${USER_COLUMNS} FROM users WHERE ${conditions.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $2`,
      values,
    );
    return toPage(rows, limit, (row) => AuthRepository.membersOrder.cursorOf(row));
  }

  /** A user of the organization who has not been removed; with `manager`, locked for the transaction. */
  async findMember(organizationId: string, userId: string, manager?: EntityManager): Promise<UserEntity | null> {
    const [row] = await this.sql
      .in(manager)
      .query<UserEntity>(
        manager ? 'auth.members.findForUpdate' : 'auth.members.find',
        `SELECT ${USER_COLUMNS} FROM users WHERE id = $1 AND organization_id = $2 AND removed_at IS NULL${manager ? ' FOR UPDATE' : ''}`,
        [userId, organizationId],
      );
    return row ?? null;
  }

  /** Serializes changes to one organization's members until the transaction ends (the last owner stays). */
  async lockMembers(manager: EntityManager, organizationId: string): Promise<void> {
    await this.sql.in(manager).query('auth.lockMembers', 'SELECT pg_advisory_xact_lock($1, hashtext($2))', [AdvisoryLock.Members, organizationId]);
  }

  async countOwners(manager: EntityManager, organizationId: string): Promise<number> {
    return manager.getRepository(UserEntity).countBy({ organizationId, role: Role.Owner, removedAt: IsNull() });
  }

  async updateMember(
    manager: EntityManager,
    user: Pick<UserEntity, 'organizationId' | 'id'>,
    changes: Partial<Pick<UserEntity, 'role' | 'name' | 'kind' | 'removedAt'>>,
  ): Promise<void> {
    await manager.getRepository(UserEntity).update({ organizationId: user.organizationId, id: user.id }, changes);
  }

  /** Revokes every key of the user not yet revoked; returns their hashes, to forget cached lookups. */
  async revokeKeysOf(manager: EntityManager, user: Pick<UserEntity, 'organizationId' | 'id'>, now: Date): Promise<string[]> {
    const where = { organizationId: user.organizationId, userId: user.id, revokedAt: IsNull() };
    const keys = await manager.getRepository(ApiKeyEntity).findBy(where);
    if (keys.length > 0) await manager.getRepository(ApiKeyEntity).update(where, { revokedAt: now });
    return keys.map((key) => key.keyHash);
  }

  async organizationCount(manager: EntityManager = this.dataSource.manager): Promise<number> {
    return manager.getRepository(OrganizationEntity).count();
  }

  /** Serializes first-run setups until the transaction ends: only one of two at once creates the first organization. */
  async lockFirstRun(manager: EntityManager): Promise<void> {
    await this.sql.in(manager).query('auth.lockFirstRun', 'SELECT pg_advisory_xact_lock($1)', [AdvisoryLock.FirstRun]);
  }

  listOrganizations(): Promise<OrganizationEntity[]> {
    return this.dataSource.getRepository(OrganizationEntity).find({ order: { createdAt: 'ASC' } });
  }

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }
}

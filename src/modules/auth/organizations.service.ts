import { Injectable } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { newId } from '../../platform/database/ids';
import { AuthRepository } from './auth.repository';
import { AuthError, AuthErrorCode } from './domain/auth.errors';
import { Role } from './domain/role';
import { UserKind } from './domain/user-kind';
import { OrganizationEntity, UserEntity } from './entities';
import { OrganizationFeatures } from './entities/organization.entity';

/** PostgreSQL's unique_violation. */
const UNIQUE_VIOLATION = '23505';

/** Organizations and their users, as operators create them (CLI, demo). */
@Injectable()
export class OrganizationsService {
  constructor(private readonly repository: AuthRepository) {}

  async createOrganization(input: { slug: string; name: string; features?: OrganizationFeatures }): Promise<OrganizationEntity> {
    try {
      return await this.repository.insertOrganization({ id: newId(), slug: input.slug, name: input.name, features: input.features ?? {} });
    } catch (error) {
      if (isUniqueViolation(error)) throw new AuthError(AuthErrorCode.OrganizationExists, `An organization with slug ${input.slug} already exists.`);
      throw error;
    }
  }

  /** A person by default; `kind: service_account` makes a user that computers may be created for (`serviceAccountId`). */
  async createUser(organizationSlug: string, input: { email: string; name: string; role: Role; kind?: UserKind }): Promise<UserEntity> {
    const organization = await this.requireOrganization(organizationSlug);
    try {
      return await this.repository.insertUser({ id: newId(), organizationId: organization.id, ...input, kind: input.kind ?? UserKind.Human });
    } catch (error) {
      if (isUniqueViolation(error)) throw new AuthError(AuthErrorCode.UserExists, `${input.email} is already a user of ${organizationSlug}.`);
      throw error;
    }
  }

  /** Returns the organization, creating it when missing (idempotent seeding). */
  async ensureOrganization(input: { slug: string; name: string }): Promise<OrganizationEntity> {
    const existing = await this.repository.findOrganizationBySlug(input.slug);
    if (existing) return existing;
    try {
      return await this.createOrganization(input);
    } catch (error) {
      const raced = await this.repository.findOrganizationBySlug(input.slug);
      if (raced) return raced;
      throw error;
    }
  }

  async ensureUser(organizationSlug: string, input: { email: string; name: string; role: Role; kind?: UserKind }): Promise<UserEntity> {
    const organization = await this.requireOrganization(organizationSlug);
    return (await this.repository.findUserByEmail(organization.id, input.email)) ?? this.createUser(organizationSlug, input);
  }

  async setFeature(organizationSlug: string, feature: keyof OrganizationFeatures, enabled: boolean): Promise<void> {
    const organization = await this.requireOrganization(organizationSlug);
    await this.repository.setFeature(organization.id, feature, enabled);
  }

  async hasFeature(organizationId: string, feature: keyof OrganizationFeatures): Promise<boolean> {
    const organization = await this.repository.findOrganization(organizationId);
    return organization?.features[feature] === true;
  }

  /** Whether `userId` names a service account of the organization (not a person, not another organization's user). */
  async isServiceAccount(organizationId: string, userId: string): Promise<boolean> {
    return this.repository.isServiceAccount(organizationId, userId);
  }

  /** Which of these user ids (lower-case UUIDs, as the API writes them) are users of the organization. */
  usersAmong(organizationId: string, userIds: string[]): Promise<Set<string>> {
    return this.repository.usersAmong(organizationId, [...new Set(userIds)]);
  }

  listOrganizations(): Promise<OrganizationEntity[]> {
    return this.repository.listOrganizations();
  }

  /** By id; for a caller whose credential was just accepted (so it exists: otherwise an error, not a 404). */
  async requireOrganizationById(id: string): Promise<OrganizationEntity> {
    const organization = await this.repository.findOrganization(id);
    if (!organization) throw new Error(`Organization ${id} vanished`);
    return organization;
  }

  async requireOrganization(slug: string): Promise<OrganizationEntity> {
    const organization = await this.repository.findOrganizationBySlug(slug);
    if (!organization) throw new AuthError(AuthErrorCode.OrganizationNotFound, `No organization with slug ${slug} exists.`);
    return organization;
  }

  async requireUser(organizationSlug: string, email: string): Promise<UserEntity> {
    const organization = await this.requireOrganization(organizationSlug);
    const user = await this.repository.findUserByEmail(organization.id, email);
    if (!user || user.removedAt) throw new AuthError(AuthErrorCode.UserNotFound, `No user ${email} exists in ${organizationSlug}${user ? ' (removed)' : ''}.`);
    return user;
  }
}

function isUniqueViolation(error: unknown): boolean {
  return error instanceof QueryFailedError && (error.driverError as { code?: string }).code === UNIQUE_VIOLATION;
}

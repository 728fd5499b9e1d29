import { randomUUID } from 'node:crypto';
import { ApiKeysService, OrganizationsService, Role, UserKind } from '../../src/modules/auth';
import { OrganizationFeatures } from '../../src/modules/auth/entities/organization.entity';
import { TestApp } from './test-app';

export interface TestUser {
  organizationId: string;
  organizationSlug: string;
  userId: string;
  role: Role;
  email: string;
  key: string;
  apiKeyId: string;
  /** `{ Authorization: 'Bearer <key>' }` */
  auth: { Authorization: string };
}

export async function createOrganization(t: TestApp, features: OrganizationFeatures = {}) {
  const slug = `org-${randomUUID().slice(0, 8)}`;
  return t.app.get(OrganizationsService).createOrganization({ slug, name: `Org ${slug}`, features });
}

/** A user (a person unless `kind` says otherwise) of the given role with a fresh API key, in the given organization or a new one. */
export async function createUser(
  t: TestApp,
  role: Role,
  organization?: { id: string; slug: string },
  email = `${role}-${randomUUID().slice(0, 8)}@example.test`,
  kind: UserKind = UserKind.Human,
): Promise<TestUser> {
  const org = organization ?? (await createOrganization(t));
  const user = await t.app.get(OrganizationsService).createUser(org.slug, { email, name: `A ${role}`, role, kind });
  const { entity, key } = await t.app.get(ApiKeysService).create({ organizationId: org.id, userId: user.id, name: 'test' });
  return {
    organizationId: org.id,
    organizationSlug: org.slug,
    userId: user.id,
    role,
    email: user.email,
    key,
    apiKeyId: entity.id,
    auth: { Authorization: `Bearer ${key}` },
  };
}

/** A service account (a member) with a fresh API key: computers may be created for it with `serviceAccountId`. */
export function createServiceAccount(t: TestApp, organization: { id: string; slug: string }): Promise<TestUser> {
  return createUser(t, Role.Member, organization, `bot-${randomUUID().slice(0, 8)}@example.test`, UserKind.ServiceAccount);
}

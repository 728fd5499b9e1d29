import { INestApplicationContext } from '@nestjs/common';
import { isEmail } from 'class-validator';
import { ApiKeysService, OrganizationsService, Role, ROLES, UserKind } from '../modules/auth';
import type { UserEntity } from '../modules/auth/entities';
import { OrganizationFeatures } from '../modules/auth/entities/organization.entity';

export class UsageError extends Error {}

export const USAGE = `Usage: npm run cli -- <command> [arguments]

  org:create <slug> <name>                      create an organization
  user:create <org> <email> <name> <role>       add a person (role: ${ROLES.join(', ')})
  service-account:create <org> <email> <name> [role]
                                                add a service account (role default member): computers
                                                may be created for it (serviceAccountId); key:create
                                                gives it API keys
  key:create <org> <email> [name] [expiresAt]   create an API key for a user; prints it once
  key:revoke <apiKeyId>                         revoke an API key at once
  feature:enable <org> message-history          enable an organization feature
  feature:disable <org> message-history         disable it
  readiness evaluate <path> [--json] [--upload]  evaluate a git repository's readiness for agents
  help                                          this text

Configuration comes from the environment, as for the server (DATABASE_URL or DATA_DIR).
Results are printed as JSON on stdout.`;

const FEATURES: Record<string, keyof OrganizationFeatures> = { 'message-history': 'messageHistory' };
const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

type Command = (app: INestApplicationContext, args: string[]) => Promise<unknown>;

function expectArgs(args: string[], min: number, max: number): void {
  if (args.length < min || args.length > max) throw new UsageError(`Wrong number of arguments.\n\n${USAGE}`);
}

function slug(value: string): string {
  if (!SLUG.test(value)) throw new UsageError(`"${value}" is not a valid organization slug (lower-case letters, digits and -, at most 63).`);
  return value;
}

function email(value: string): string {
  if (!isEmail(value)) throw new UsageError(`"${value}" is not an email address.`);
  return value.toLowerCase();
}

function feature(value: string): keyof OrganizationFeatures {
  const name = FEATURES[value];
  if (!name) throw new UsageError(`Unknown feature "${value}"; known: ${Object.keys(FEATURES).join(', ')}.`);
  return name;
}

function role(value: string): Role {
  if (!ROLES.includes(value as Role)) throw new UsageError(`Unknown role "${value}"; roles: ${ROLES.join(', ')}.`);
  return value as Role;
}

function userView(user: UserEntity) {
  return { id: user.id, organizationId: user.organizationId, email: user.email, name: user.name, role: user.role, kind: user.kind };
}

function setFeature(enabled: boolean): Command {
  return async (app, args) => {
    expectArgs(args, 2, 2);
    await app.get(OrganizationsService).setFeature(slug(args[0]), feature(args[1]), enabled);
    return { organization: args[0], feature: args[1], enabled };
  };
}

export const COMMANDS: Record<string, Command> = {
  'org:create': async (app, args) => {
    expectArgs(args, 2, 2);
    const org = await app.get(OrganizationsService).createOrganization({ slug: slug(args[0]), name: args[1] });
    return { id: org.id, slug: org.slug, name: org.name };
  },
  'user:create': async (app, args) => {
    expectArgs(args, 4, 4);
    const user = await app.get(OrganizationsService).createUser(slug(args[0]), { email: email(args[1]), name: args[2], role: role(args[3]) });
    return userView(user);
  },
  'service-account:create': async (app, args) => {
    expectArgs(args, 3, 4);
    const user = await app
      .get(OrganizationsService)
      .createUser(slug(args[0]), { email: email(args[1]), name: args[2], role: role(args[3] ?? Role.Member), kind: UserKind.ServiceAccount });
    return userView(user);
  },
  'key:create': async (app, args) => {
    expectArgs(args, 2, 4);
    const expiresAt = args[3] === undefined ? undefined : new Date(args[3]);
    if (expiresAt && Number.isNaN(expiresAt.getTime())) throw new UsageError(`"${args[3]}" is not a date (use ISO 8601).`);
    const user = await app.get(OrganizationsService).requireUser(slug(args[0]), email(args[1]));
    const { entity, key } = await app
      .get(ApiKeysService)
      .create({ organizationId: user.organizationId, userId: user.id, name: args[2] ?? 'cli', expiresAt });
    return { id: entity.id, name: entity.name, prefix: entity.prefix, userId: user.id, key };
  },
  'key:revoke': async (app, args) => {
    expectArgs(args, 1, 1);
    const key = await app.get(ApiKeysService).revokeById(args[0]);
    return { id: key.id, revokedAt: key.revokedAt?.toISOString() };
  },
  'feature:enable': setFeature(true),
  'feature:disable': setFeature(false),
};

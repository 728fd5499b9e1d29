import { INestApplicationContext } from '@nestjs/common';
import { ApiKeysService, MembersActor, MembersService, OPERATOR, OrganizationsService, Role, ROLES, SetupService, UserKind } from '../modules/auth';
import type { UserEntity } from '../modules/auth/entities';
import { isEmailAddress } from '../platform/http/json-schema';
import { OrganizationFeatures } from '../modules/auth/entities/organization.entity';
import { backup } from './backup-commands';
import { POOL_NAME_PATTERN, WorkerPoolsService } from '../modules/computers';
import type { WorkerEnrollmentTokenEntity, WorkerPoolEntity } from '../modules/computers';

export class UsageError extends Error {}

export const USAGE = `Usage: npm run cli -- <command> [arguments]

  setup <org-slug> <org-name> <email> <name>   on an empty server: the first organization, its owner
                                                and the owner's API key (printed once)
  org:create <slug> <name>                      create an organization
  org:list                                      list the organizations
  user:create <org> <email> <name> <role>       add a person (role: ${ROLES.join(', ')})
  service-account:create <org> <email> <name> [role]
                                                add a service account (role default member): computers
                                                may be created for it (serviceAccountId); key:create
                                                gives it API keys
  user:list <org>                               list the organization's users and service accounts
  user:role <org> <email> <role>                change a user's role (the last owner stays an owner)
  user:remove <org> <email>                     remove a user: every key of theirs is revoked at once
  key:create <org> <email> [name] [expiresAt]   create an API key for a user; prints it once
  key:list <org> [email]                        list the organization's API keys (or one user's)
  key:revoke <apiKeyId>                         revoke an API key at once
  feature:enable <org> message-history          enable an organization feature
  feature:disable <org> message-history         disable it
  backup <file>                                 a consistent snapshot of the whole database, while the server
                                                runs (gzip, JSON lines); says which secrets key it needs
  restore <file>                                a snapshot into an empty database: a new DATA_DIR, or an empty
                                                PostgreSQL database (DATABASE_URL); older snapshots are migrated
  move-to-postgres <url>                        copy the embedded database (DATA_DIR) into an empty PostgreSQL
                                                database, checking every table's rows; the server may run
  pool:create <org> <name> [description]
                                                create a worker pool (workers run managed computers in it)
  pool:list <org>                               list the organization's worker pools
  pool:token:create <org> <pool> [name] [expiresAt]
                                                create a pool's enrollment token; prints it once
  pool:token:list <org> <pool>                  list a pool's enrollment tokens
  pool:token:revoke <org> <pool> <tokenId>      revoke an enrollment token: it registers no more workers
  readiness evaluate <path> [--json] [--upload]  evaluate a git repository's readiness for agents
  help                                          this text

Configuration comes from the environment, as for the server (DATABASE_URL or DATA_DIR). While a server
runs on the embedded database, it runs these commands for the CLI (through a socket in DATA_DIR).
Results are printed as JSON on stdout.`;

/** The operator at the command line: any role, but the organization still keeps an owner. */
const operator = (organizationId: string): MembersActor => ({ organizationId, role: null, by: OPERATOR });

/** Every page of a paged list, for printing whole. */
async function allPages<T>(page: (cursor: string | undefined) => Promise<{ items: T[]; pagination: { nextCursor: string | null } }>): Promise<T[]> {
  const items: T[] = [];
  for (let cursor: string | undefined, more = true; more;) {
    const next = await page(cursor);
    items.push(...next.items);
    cursor = next.pagination.nextCursor ?? undefined;
    more = cursor !== undefined;
  }
  return items;
}

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
  if (!isEmailAddress(value)) throw new UsageError(`"${value}" is not an email address.`);
  return value.toLowerCase();
}

function feature(value: string): keyof OrganizationFeatures {
  const name = FEATURES[value];
  if (!name) throw new UsageError(`Unknown feature "${value}"; known: ${Object.keys(FEATURES).join(', ')}.`);
  return name;
}

function poolName(value: string): string {
  if (!new RegExp(POOL_NAME_PATTERN).test(value)) throw new UsageError(`"${value}" is not a valid pool name (lower-case letters, digits and -, at most 63).`);
  return value;
}

function date(value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const parsed = new Date(value);
  if (Number.isNaN(parsed.getTime())) throw new UsageError(`"${value}" is not a date (use ISO 8601).`);
  return parsed;
}

const poolOperator = (organizationId: string) => ({ organizationId, userId: null, by: OPERATOR });

function poolView(pool: WorkerPoolEntity) {
  return {
    id: pool.id,
    name: pool.name,
    description: pool.description,
    createdAt: pool.createdAt.toISOString(),
  };
}

function tokenView(token: WorkerEnrollmentTokenEntity) {
  return {
    id: token.id,
    poolId: token.poolId,
    name: token.name,
    prefix: token.prefix,
    createdAt: token.createdAt.toISOString(),
    lastUsedAt: token.lastUsedAt?.toISOString() ?? null,
    expiresAt: token.expiresAt?.toISOString() ?? null,
    revokedAt: token.revokedAt?.toISOString() ?? null,
  };
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
  backup,
  'org:create': async (app, args) => {
    expectArgs(args, 2, 2);
    const org = await app.get(OrganizationsService).createOrganization({ slug: slug(args[0]), name: args[1] });
    return { id: org.id, slug: org.slug, name: org.name };
  },
  setup: async (app, args) => {
    expectArgs(args, 4, 4);
    const { organization, owner, apiKey } = await app
      .get(SetupService)
      .complete({ organization: { slug: slug(args[0]), name: args[1] }, owner: { email: email(args[2]), name: args[3] } }, 'operator');
    return { organization: { id: organization.id, slug: organization.slug, name: organization.name }, owner: userView(owner), key: apiKey.key };
  },
  'org:list': async (app, args) => {
    expectArgs(args, 0, 0);
    return (await app.get(OrganizationsService).listOrganizations()).map((org) => ({
      id: org.id,
      slug: org.slug,
      name: org.name,
      createdAt: org.createdAt.toISOString(),
    }));
  },
  'user:list': async (app, args) => {
    expectArgs(args, 1, 1);
    const org = await app.get(OrganizationsService).requireOrganization(slug(args[0]));
    return (await allPages((cursor) => app.get(MembersService).list(org.id, undefined, cursor, 100))).map(userView);
  },
  'user:role': async (app, args) => {
    expectArgs(args, 3, 3);
    const user = await app.get(OrganizationsService).requireUser(slug(args[0]), email(args[1]));
    return userView(await app.get(MembersService).change(operator(user.organizationId), user.id, { role: role(args[2]) }));
  },
  'user:remove': async (app, args) => {
    expectArgs(args, 2, 2);
    const user = await app.get(OrganizationsService).requireUser(slug(args[0]), email(args[1]));
    const removed = await app.get(MembersService).remove(operator(user.organizationId), user.id);
    return { ...userView(removed), removedAt: removed.removedAt?.toISOString() };
  },
  'key:list': async (app, args) => {
    expectArgs(args, 1, 2);
    const organizations = app.get(OrganizationsService);
    const org = await organizations.requireOrganization(slug(args[0]));
    const userId = args[1] === undefined ? undefined : (await organizations.requireUser(org.slug, email(args[1]))).id;
    const keys = await allPages((cursor) => app.get(ApiKeysService).listOf(org.id, userId, cursor, 100));
    return keys.map((key) => ({
      id: key.id,
      name: key.name,
      prefix: key.prefix,
      userId: key.userId,
      createdAt: key.createdAt.toISOString(),
      lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
      expiresAt: key.expiresAt?.toISOString() ?? null,
      revokedAt: key.revokedAt?.toISOString() ?? null,
    }));
  },
  // Through the members' rules, so the address of a removed user brings that user back.
  'user:create': async (app, args) => {
    expectArgs(args, 4, 4);
    const org = await app.get(OrganizationsService).requireOrganization(slug(args[0]));
    return userView(await app.get(MembersService).add(operator(org.id), { email: email(args[1]), name: args[2], role: role(args[3]), kind: UserKind.Human }));
  },
  'service-account:create': async (app, args) => {
    expectArgs(args, 3, 4);
    const org = await app.get(OrganizationsService).requireOrganization(slug(args[0]));
    const input = { email: email(args[1]), name: args[2], role: role(args[3] ?? Role.Member), kind: UserKind.ServiceAccount };
    return userView(await app.get(MembersService).add(operator(org.id), input));
  },
  'key:create': async (app, args) => {
    expectArgs(args, 2, 4);
    const expiresAt = args[3] === undefined ? undefined : new Date(args[3]);
    if (expiresAt && Number.isNaN(expiresAt.getTime())) throw new UsageError(`"${args[3]}" is not a date (use ISO 8601).`);
    const user = await app.get(OrganizationsService).requireUser(slug(args[0]), email(args[1]));
    const { entity, key } = await app.get(ApiKeysService).create({ organizationId: user.organizationId, userId: user.id, name: args[2] ?? 'cli', expiresAt });
    return { id: entity.id, name: entity.name, prefix: entity.prefix, userId: user.id, key };
  },
  'key:revoke': async (app, args) => {
    expectArgs(args, 1, 1);
    const key = await app.get(ApiKeysService).revokeById(args[0]);
    return { id: key.id, revokedAt: key.revokedAt?.toISOString() };
  },
  'pool:create': async (app, args) => {
    expectArgs(args, 2, 3);
    const org = await app.get(OrganizationsService).requireOrganization(slug(args[0]));
    return poolView(await app.get(WorkerPoolsService).create(poolOperator(org.id), { name: poolName(args[1]), description: args[2] }));
  },
  'pool:list': async (app, args) => {
    expectArgs(args, 1, 1);
    const org = await app.get(OrganizationsService).requireOrganization(slug(args[0]));
    return (await allPages((cursor) => app.get(WorkerPoolsService).list(org.id, cursor, 100))).map(poolView);
  },
  'pool:token:create': async (app, args) => {
    expectArgs(args, 2, 4);
    const expiresAt = date(args[3]);
    const org = await app.get(OrganizationsService).requireOrganization(slug(args[0]));
    const { entity, token } = await app.get(WorkerPoolsService).createToken(poolOperator(org.id), args[1], { name: args[2] ?? 'cli', expiresAt });
    return { ...tokenView(entity), token };
  },
  'pool:token:list': async (app, args) => {
    expectArgs(args, 2, 2);
    const org = await app.get(OrganizationsService).requireOrganization(slug(args[0]));
    const pool = await app.get(WorkerPoolsService).find(org.id, args[1]);
    return (await allPages((cursor) => app.get(WorkerPoolsService).listTokens(org.id, pool.id, cursor, 100))).map(tokenView);
  },
  'pool:token:revoke': async (app, args) => {
    expectArgs(args, 3, 3);
    const org = await app.get(OrganizationsService).requireOrganization(slug(args[0]));
    return tokenView(await app.get(WorkerPoolsService).revokeToken(poolOperator(org.id), args[1], args[2]));
  },
  'feature:enable': setFeature(true),
  'feature:disable': setFeature(false),
};

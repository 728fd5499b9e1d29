import type { ApiSchema } from '../../../platform/http/api-schema';
import { closedObject, displayName, SchemaObject, SchemaRegistry } from '../../../platform/http/json-schema';
import { pageQuery } from '../../../platform/http/pagination';
import { ROLES } from '../domain/role';
import { UserKind, USER_KINDS } from '../domain/user-kind';
import { AUTH_VIEWS } from './auth-views';

/**
 * The Auth module's request bodies, query strings and answers: first-run setup, members and API keys.
 * Ajv validates requests against them and the OpenAPI document publishes the very same schemas.
 */
const email = (example: string, description?: string): SchemaObject => ({
  type: 'string',
  format: 'email',
  maxLength: 254,
  example,
  ...(description ? { description } : {}),
});
const role = (description: string): SchemaObject => ({ type: 'string', enum: [...ROLES], description });
const kind: SchemaObject = { type: 'string', enum: [...USER_KINDS] };

export const authSchemas = new SchemaRegistry('auth').add({
  ...AUTH_VIEWS,
  SetupBody: closedObject(['setupToken', 'organization', 'owner'], {
    setupToken: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: 'The token the server printed at start (`setup_...`).',
      example: 'setup_...',
    },
    organization: closedObject(['slug', 'name'], {
      slug: {
        type: 'string',
        pattern: '^[a-z0-9][a-z0-9-]{0,62}$',
        'x-problem': 'must be lower-case letters, digits and -, at most 63, starting with a letter or digit',
        description: 'Lower-case letters, digits and -, at most 63.',
        example: 'acme',
      },
      name: displayName("the organization's name", 200, 'Acme'),
    }),
    owner: closedObject(['email', 'name'], {
      email: email('you@acme.example'),
      name: displayName("the owner's name", 200, 'You'),
    }),
  }),
  AddMemberBody: closedObject(['email', 'name', 'role'], {
    email: email('ada@example.com', 'Stored in lower case; one user per address in an organization.'),
    name: displayName("the member's name", 200, 'Ada Lovelace'),
    role: role('At most your own role.'),
    kind: {
      ...kind,
      default: UserKind.Human,
      description: '`service_account`: a user automation acts as; computers may be created for it (`serviceAccountId`).',
    },
  }),
  ChangeMemberBody: closedObject([], {
    role: role('At most your own role; the last owner stays an owner.'),
    name: displayName("the member's name", 200),
  }),
  CreateApiKeyBody: closedObject(['name'], {
    name: displayName('a name for the key', 100, 'CI pipeline'),
    expiresAt: {
      type: 'string',
      format: 'date-time',
      description: 'When the key stops working (ISO 8601, in the future). Omit for a key that lasts until revoked.',
      example: '2027-01-01T00:00:00Z',
    },
  }),
  ListMembersQuery: pageQuery({ kind: { ...kind, description: 'Only people, or only service accounts.' } }),
  ListApiKeysQuery: pageQuery({
    scope: {
      type: 'string',
      enum: ['own', 'organization'],
      default: 'own',
      description: '`organization` lists every key of the organization: owners and managers only (403 otherwise).',
    },
  }),
});

export type SetupInput = ApiSchema<'SetupBody'>;
export type AddMemberInput = ApiSchema<'AddMemberBody'>;
export type ChangeMemberInput = ApiSchema<'ChangeMemberBody'>;
export type CreateApiKeyInput = ApiSchema<'CreateApiKeyBody'>;
export type ListMembersQuery = ApiSchema<'ListMembersQuery'>;
export type ListApiKeysQuery = ApiSchema<'ListApiKeysQuery'>;

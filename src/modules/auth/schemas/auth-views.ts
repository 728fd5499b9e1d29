import type { ApiSchema } from '../../../platform/http/api-schema';
import { answerObject as object, ref, SchemaObject, unixMs, uuidString } from '../../../platform/http/json-schema';
import { pageOf } from '../../../platform/http/pagination';
import { ROLES } from '../domain/role';
import { USER_KINDS } from '../domain/user-kind';

/** What the Auth module answers: members, API keys, the first run and `GET /api/v0/me`. */

const member = {
  id: uuidString(),
  email: { type: 'string', format: 'email' },
  name: { type: 'string' },
  role: { type: 'string', enum: [...ROLES] },
  kind: { type: 'string', enum: [...USER_KINDS] },
  createdAt: unixMs(),
};
const apiKey = {
  id: uuidString(),
  name: { type: 'string' },
  prefix: { type: 'string', description: 'The first characters of the key, to recognise it.', example: 'apk_Xk3r9QaZ' },
  userId: uuidString('The user the key acts as.'),
  createdAt: unixMs(),
  lastUsedAt: unixMs('Unix ms; updated at most once a minute.', true),
  expiresAt: unixMs('Unix ms.', true),
  revokedAt: unixMs('Unix ms; a revoked key answers 401 at once.', true),
};
const createdApiKey = {
  ...apiKey,
  key: { type: 'string', description: 'The key itself. Shown only in this response: store it now.', example: 'apk_Xk3r9QaZ...' },
};
const organization = { id: uuidString(), slug: { type: 'string' }, name: { type: 'string' } };

export const AUTH_VIEWS: Record<string, SchemaObject> = {
  MemberView: object(member),
  RemovedMemberView: object({
    ...member,
    removedAt: unixMs('Unix ms. Every key of the user was revoked; adding the address again brings the user back.'),
  }),
  MemberListView: pageOf('members', 'MemberView'),
  ApiKeyView: object(apiKey),
  CreatedApiKeyView: object(createdApiKey),
  ApiKeyListView: pageOf('apiKeys', 'ApiKeyView'),
  SetupStatusView: object({
    needed: { type: 'boolean', description: 'Whether the server still has no organization (the setup token works only then).' },
  }),
  SetupOrganizationView: object(organization),
  SetupResultView: object({
    organization: ref('SetupOrganizationView'),
    owner: ref('MemberView'),
    apiKey: { allOf: [ref('CreatedApiKeyView')], description: "The owner's first key: in this response only." },
  }),
  MeUserView: object(
    { id: member.id, email: member.email, name: member.name, role: member.role },
    [],
    'You, as the members list shows you; `role` is read from the server at each request, not from the credential.',
  ),
  MeCredentialView: object(
    {
      kind: { type: 'string', enum: ['api_key', 'jwt'], description: 'How this request proved who you are.' },
      apiKeyId: uuidString('The API key this request used (`kind: api_key`).'),
    },
    ['apiKeyId'],
  ),
  MeAbilitiesView: object({
    createApiKeys: {
      type: 'boolean',
      description: 'Whether you may create API keys now (`restrictApiKeyCreationToManagers` limits it to owners and managers).',
    },
    manageOrganizationApiKeys: {
      type: 'boolean',
      description: 'Whether you may list and revoke every key of the organization (`scope=organization`): owners and managers.',
    },
  }),
  MeView: object({
    user: ref('MeUserView'),
    organization: ref('SetupOrganizationView'),
    credential: ref('MeCredentialView'),
    can: { allOf: [ref('MeAbilitiesView')], description: 'What the rules (roles, enterprise controls) let you do, so a client shows only what will work.' },
  }),
};

export type MemberView = ApiSchema<'MemberView'>;

export type RemovedMemberView = ApiSchema<'RemovedMemberView'>;

export type MemberListView = ApiSchema<'MemberListView'>;

export type ApiKeyView = ApiSchema<'ApiKeyView'>;

export type CreatedApiKeyView = ApiSchema<'CreatedApiKeyView'>;

export type ApiKeyListView = ApiSchema<'ApiKeyListView'>;

export type SetupStatusView = ApiSchema<'SetupStatusView'>;

export type SetupOrganizationView = ApiSchema<'SetupOrganizationView'>;

export type SetupResultView = ApiSchema<'SetupResultView'>;

export type MeView = ApiSchema<'MeView'>;

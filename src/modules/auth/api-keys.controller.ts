import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { ApiErrorExamples, ApiRequestExample, EXAMPLE_ID, V0_ERROR } from '../../platform/http/openapi';
import { ApiKeysService } from './api-keys.service';
import { Authenticated, CurrentPrincipal } from './auth.decorators';
import { Principal } from './domain/principal';
import { ApiKeyListView, ApiKeyView, CreatedApiKeyView } from './schemas/auth-views';
import { authSchemas, CreateApiKeyInput, ListApiKeysQuery } from './schemas/auth.schemas';
import { ApiKeyEntity } from './entities';
import { pageSize } from '../../platform/http/pagination';
import { QuerySchema, ref } from '../../platform/http/json-schema';
import { PathIds } from '../../platform/http/path-ids';
import { apiKeyCreationRestricted, apiKeyNotFound, listingEveryKeyRefused } from './domain/auth.errors';

/** The web application's `{app_url}/settings/api-keys`, where users manage their API keys. */
@ApiTags('API keys')
@Controller('settings/api-keys')
@Authenticated()
@ApiBadRequestResponse({ description: 'Invalid input; `detail` names the field, `metadata.errors` lists all.', schema: V0_ERROR })
@PathIds({ apiKeyId: apiKeyNotFound })
@ApiErrorExamples(apiKeyNotFound(EXAMPLE_ID))
export class ApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Post()
  @ApiOperation({
    summary: 'Create an API key',
    description:
      "Creates a key acting as the caller, with the caller's role. The key is in the response only once; the server keeps only its hash. " +
      'Any role may create keys, unless the enterprise control `restrictApiKeyCreationToManagers` is on: then members and guests receive 403.',
  })
  @ApiCreatedResponse({ schema: ref('CreatedApiKeyView') })
  @ApiForbiddenResponse({
    description:
      "A member or guest while `restrictApiKeyCreationToManagers` is on (`api_key_creation_restricted`); a computer's agent token (`computer_token_not_accepted`).",
    schema: V0_ERROR,
  })
  @ApiErrorExamples(apiKeyCreationRestricted())
  @ApiBody({ schema: ref('CreateApiKeyBody') })
  @ApiRequestExample({ name: 'laptop' })
  async create(@CurrentPrincipal() principal: Principal, @Body(authSchemas.pipe('CreateApiKeyBody')) body: CreateApiKeyInput): Promise<CreatedApiKeyView> {
    const { entity, key } = await this.apiKeys.createForCaller(principal, {
      name: body.name,
      expiresAt: body.expiresAt ? new Date(body.expiresAt) : undefined,
    });
    return { ...toApiKeyView(entity), key };
  }

  @Get()
  @ApiOperation({
    summary: 'List API keys',
    description:
      'Your own keys by default, newest first. Keys themselves are never shown again. ' +
      "This path is also the web console's page: a browser navigation (`Accept` naming `text/html` at least as preferred as `application/json`) gets the console's HTML instead; " +
      'send `Accept: application/json`, `*/*` or no `Accept` for this operation (docs/api.md, "The web console on the same paths").',
  })
  @ApiOkResponse({ schema: ref('ApiKeyListView') })
  @ApiForbiddenResponse({
    description: "`scope=organization` by a member or guest (`insufficient_role`); a computer's agent token (`computer_token_not_accepted`).",
    schema: V0_ERROR,
  })
  @ApiErrorExamples(listingEveryKeyRefused())
  async list(@CurrentPrincipal() principal: Principal, @QuerySchema(authSchemas, 'ListApiKeysQuery') query: ListApiKeysQuery): Promise<ApiKeyListView> {
    const page = await this.apiKeys.list(principal, query.scope ?? 'own', query.cursor, pageSize(query));
    return { apiKeys: page.items.map(toApiKeyView), pagination: page.pagination };
  }

  @Delete(':apiKeyId')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Revoke an API key',
    description:
      'The key answers 401 from the next request on. Your own keys; owners and managers may revoke any key of the organization. Revoking twice is harmless.',
  })
  @ApiOkResponse({ schema: ref('ApiKeyView') })
  @ApiForbiddenResponse({ description: "A computer's agent token (`computer_token_not_accepted`).", schema: V0_ERROR })
  @ApiNotFoundResponse({ description: 'No such key in your organization (or not yours, for members and guests).', schema: V0_ERROR })
  async revoke(@CurrentPrincipal() principal: Principal, @Param('apiKeyId') id: string): Promise<ApiKeyView> {
    return toApiKeyView(await this.apiKeys.revoke(principal, id));
  }
}

export function toApiKeyView(key: ApiKeyEntity): ApiKeyView {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    userId: key.userId,
    createdAt: key.createdAt.getTime(),
    lastUsedAt: key.lastUsedAt?.getTime() ?? null,
    expiresAt: key.expiresAt?.getTime() ?? null,
    revokedAt: key.revokedAt?.getTime() ?? null,
  };
}

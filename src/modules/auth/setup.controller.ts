import { Body, Controller, Get, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { ApiErrorExamples, V0_ERROR } from '../../platform/http/openapi';
import { setupDone } from './domain/auth.errors';
import { toApiKeyView } from './api-keys.controller';
import { Public } from './auth.decorators';
import { SetupResultView, SetupStatusView } from './schemas/auth-views';
import { authSchemas, SetupInput } from './schemas/auth.schemas';
import { toMemberView } from './members.controller';
import { SetupService } from './setup.service';
import { ref } from '../../platform/http/json-schema';

/** The first run of a fresh server (added). */
@ApiTags('Setup')
@Controller('api/v0/setup')
@Public()
export class SetupController {
  constructor(private readonly setup: SetupService) {}

  @Get()
  @ApiOperation({ summary: 'Whether the server needs its first organization', description: 'No credentials needed.' })
  @ApiOkResponse({ schema: ref('SetupStatusView') })
  async status(): Promise<SetupStatusView> {
    return { needed: await this.setup.needed() };
  }

  @Post()
  @ApiOperation({
    summary: 'Make the first organization and its owner',
    description:
      'On a server with no organization, with the setup token it printed at start (derived from `SECRETS_KEY`: every instance prints the same one). ' +
      "Makes the organization, its owner, and the owner's first API key, shown in this response only. Once any organization exists, the token stops working (409).",
  })
  @ApiCreatedResponse({ schema: ref('SetupResultView') })
  @ApiBadRequestResponse({ description: 'Invalid input; `detail` names the field.', schema: V0_ERROR })
  @ApiUnauthorizedResponse({ description: '`setup_invalid_token`: not the token the server printed.', schema: V0_ERROR })
  @ApiConflictResponse({ description: '`setup_done`: an organization exists already.', schema: V0_ERROR })
  @ApiErrorExamples(setupDone())
  @ApiBody({ schema: ref('SetupBody') })
  async complete(@Body(authSchemas.pipe('SetupBody')) body: SetupInput): Promise<SetupResultView> {
    const { organization, owner, apiKey } = await this.setup.completeWithToken(body.setupToken, { organization: body.organization, owner: body.owner });
    return {
      organization: { id: organization.id, slug: organization.slug, name: organization.name },
      owner: toMemberView(owner),
      apiKey: { ...toApiKeyView(apiKey.entity), key: apiKey.key },
    };
  }
}

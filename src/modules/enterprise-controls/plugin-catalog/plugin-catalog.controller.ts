import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBody, ApiForbiddenResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { PLUGIN_CATALOG_LIMITS } from '../../../contract/marketplaces';
import type { ApiSchema } from '../../../platform/http/api-schema';
import { errorBody } from '../../../platform/http/error-body';
import { ref } from '../../../platform/http/json-schema';
import { V0_ERROR } from '../../../platform/http/openapi';
import { AgentTokensOnly, Authenticated, CurrentPrincipal, Principal, Role } from '../../auth';
import { PluginCatalogView, UNKNOWN_MARKETPLACE } from './plugin-catalog';
import { pluginCatalogSchemas } from './plugin-catalog.schemas';
import { PluginCatalogService } from './plugin-catalog.service';

const L = PLUGIN_CATALOG_LIMITS;

/** An error answer's documentation, with an example of its body. */
const answer = (description: string, status: number, detail: string, metadata: Record<string, unknown>) => ({
  description,
  content: { 'application/json': { schema: V0_ERROR, example: errorBody('v0', status, detail, '', metadata) } },
});

/** The agent's side: what it found of the organization's marketplaces. */
@ApiTags('Agent channel')
@Controller('api/v0/agent/plugin-catalogs')
@Authenticated()
@AgentTokensOnly()
export class PluginCatalogReportsController {
  constructor(private readonly catalogs: PluginCatalogService) {}

  @Post()
  @HttpCode(204)
  @ApiOperation({
    summary: "Report a marketplace's plugins (added)",
    description:
      "What an agent found of one of the organization's `extraKnownMarketplaces` when it fetched it for a turn: the plugins its " +
      '`.claude-plugin/marketplace.json` lists at the commit it read (`outcome: "read"`), or why it could not read it (`outcome: "failed"`). ' +
      'The server keeps the latest report of each marketplace, with the reporting computer and the time, for `GET /api/v0/organization/enterprise-controls/plugins`; ' +
      'it never fetches a marketplace itself, so the catalog is what agents reported. The reference agent reports a marketplace when what it found changed, ' +
      `in the background of a turn. Limits: ${L.plugins} plugins; a name ${L.name} characters, a description ${L.description}, a version ${L.version}, ` +
      `an author ${L.author}, a category ${L.category}, an error ${L.error}; the body \`BODY_LIMIT_BYTES\` (413 above). Only a computer's agent token may call it.`,
  })
  @ApiBody({ schema: ref('PluginCatalogReport') })
  @ApiNoContentResponse({ description: "Kept as the organization's latest catalog of the marketplace." })
  @ApiBadRequestResponse(
    answer(
      "An invalid report (`validation_failed`, naming the field), or a `marketplace` that is not among the organization's `extraKnownMarketplaces` now " +
        '(`validation_failed` naming `marketplace`; nothing is kept).',
      400,
      `marketplace: ${UNKNOWN_MARKETPLACE}`,
      { code: 'validation_failed', errors: [{ field: 'marketplace', message: UNKNOWN_MARKETPLACE }], errorCount: 1 },
    ),
  )
  @ApiForbiddenResponse(
    answer(
      "The credential is a user's API key or JWT: only a computer's agent token may call this.",
      403,
      "Only a computer's agent token may call this (the agent working on that computer); user API keys and JWTs may not.",
      { code: 'agent_token_required' },
    ),
  )
  async report(
    @CurrentPrincipal() principal: Principal,
    @Body(pluginCatalogSchemas.pipe('PluginCatalogReport')) body: ApiSchema<'PluginCatalogReport'>,
  ): Promise<void> {
    await this.catalogs.record(principal, body);
  }
}

/** The console's side: the plugins there are to enable. */
@ApiTags('Enterprise controls')
@Controller('api/v0/organization/enterprise-controls/plugins')
@Authenticated(Role.Owner, Role.Manager)
export class PluginCatalogController {
  constructor(private readonly catalogs: PluginCatalogService) {}

  @Get()
  @ApiOperation({
    summary: 'Read the plugin catalog (added)',
    description:
      "Every marketplace of the organization's `extraKnownMarketplaces` with its address, whether `strictKnownMarketplaces` lets agents use it, and " +
      'the latest catalog its agents reported of it (the computer and the time), each plugin marked `enabled` as `enabledPlugins` has it; and the enabled ' +
      'plugins no catalog lists. The catalog is what agents reported when they fetched the marketplaces for a turn: the server does not fetch them and does ' +
      'not vouch for what they hold. `catalog` is null until an agent reports the marketplace at its current address (agents do when they next run a turn). ' +
      'Enable or disable a plugin by changing `enabledPlugins` (`PATCH /api/v0/organization/enterprise-controls`).',
  })
  @ApiOkResponse({ schema: ref('PluginCatalog') })
  read(@CurrentPrincipal() principal: Principal): Promise<PluginCatalogView> {
    return this.catalogs.catalog(principal);
  }
}

import type { ApiSchema } from '../../platform/http/api-schema';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import {
  ApiBadGatewayResponse,
  ApiBody,
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiResponse,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AppConfig } from '../../config/app-config';
import { Authenticated, CurrentPrincipal, Principal, Public, Role } from '../auth';
import { QuerySchema, ref } from '../../platform/http/json-schema';
import { ApiErrorExamples, V0_ERROR } from '../../platform/http/openapi';
import { PathIds } from '../../platform/http/path-ids';
import { EnterpriseControlsError, EnterpriseControlsErrorCode, mcpServerNotFound } from './domain/enterprise-controls.errors';
import { CallbackOutcome, McpOAuth, McpOAuthView, oauthFailed } from './mcp-oauth/mcp-oauth.service';
import { mcpOAuthSchemas } from './schemas/mcp-oauth.schemas';

const NOT_HTTP = { description: 'The server is a stdio one: there is nothing to sign in to.', schema: V0_ERROR };

/** An admin's OAuth sign-in to one of the organization's HTTP MCP servers (added; docs/agents.md, "Remote MCP servers with OAuth"). */
@ApiTags('Enterprise controls')
@Controller('api/v0/organization/enterprise-controls/mcp-servers/:serverName/oauth')
@Authenticated(Role.Owner, Role.Manager)
@PathIds({ serverName: mcpServerNotFound })
@ApiErrorExamples(
  mcpServerNotFound('github'),
  new EnterpriseControlsError(
    EnterpriseControlsErrorCode.McpTransportMismatch,
    'MCP server "db" is a stdio server: agents start it themselves, and there is nothing to sign in to.',
    { transport: 'stdio' },
  ),
)
export class McpOAuthController {
  constructor(private readonly oauth: McpOAuth) {}

  @Get()
  @ApiOperation({
    summary: "Read an HTTP MCP server's OAuth sign-in (added)",
    description: 'Whether an admin signed in to the server, until when the token holds, and why the last attempt failed. Never the tokens.',
  })
  @ApiOkResponse({ schema: ref('McpOAuthConnection') })
  @ApiNotFoundResponse({ description: 'No MCP server with that name.', schema: V0_ERROR })
  @ApiConflictResponse(NOT_HTTP)
  read(@CurrentPrincipal() principal: Principal, @Param('serverName') serverName: string): Promise<McpOAuthView> {
    return this.oauth.view(principal, serverName);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Start an OAuth sign-in to an HTTP MCP server (added)',
    description:
      "OAuth 2.1 with PKCE, through the MCP SDK's client: the server finds the MCP server's authorization server (protected resource metadata, then authorization " +
      'server metadata), registers itself as a client unless `clientId` is given, and answers the `authorizationUrl` to open in your browser. After you sign in there, ' +
      'the authorization server sends the browser to `/api/v0/mcp-oauth/callback`, which keeps the tokens (encrypted) and sends the browser on to the console. ' +
      "From then on the MCP relay sends the server's requests with the access token, refreshed ahead of its end and when the server refuses it; agents never hold it. " +
      "Every call to the authorization server keeps to the relay's address rules (`MCP_RELAY_ALLOWED_HOSTS`, `networkPolicy.allowedIps`, no redirects followed).",
  })
  @ApiBody({ schema: ref('StartMcpOAuthBody') })
  @ApiOkResponse({ schema: ref('StartedMcpOAuth') })
  @ApiForbiddenResponse({ description: 'Not an Owner or Manager, or an address of the sign-in is refused (`mcp_address_refused`).', schema: V0_ERROR })
  @ApiNotFoundResponse({ description: 'No MCP server with that name.', schema: V0_ERROR })
  @ApiConflictResponse(NOT_HTTP)
  @ApiBadGatewayResponse({
    description: 'Discovery or registration failed (`mcp_oauth_failed`): the server does not offer OAuth, say, or its authorization server refused.',
    schema: V0_ERROR,
  })
  @ApiErrorExamples(oauthFailed('github', 'its authorization server gave no http(s) address to sign in at'))
  start(
    @CurrentPrincipal() principal: Principal,
    @Param('serverName') serverName: string,
    @Body(mcpOAuthSchemas.pipe('StartMcpOAuthBody')) body: ApiSchema<'StartMcpOAuthBody'>,
  ): Promise<{ authorizationUrl: string; connection: McpOAuthView }> {
    return this.oauth.start(principal, serverName, body);
  }

  @Delete()
  @HttpCode(204)
  @ApiOperation({
    summary: "Forget an HTTP MCP server's OAuth sign-in (added)",
    description: 'The tokens are deleted here (the authorization server is not told); the relay sends the server no token until an admin signs in again.',
  })
  @ApiNoContentResponse({ description: 'Forgotten (or there was none).' })
  @ApiNotFoundResponse({ description: 'No MCP server with that name.', schema: V0_ERROR })
  @ApiConflictResponse(NOT_HTTP)
  async remove(@CurrentPrincipal() principal: Principal, @Param('serverName') serverName: string): Promise<void> {
    await this.oauth.disconnect(principal, serverName);
  }
}

/** Where the authorization server sends the admin's browser back: no credentials, the `state` is what identifies the sign-in. */
@ApiTags('Enterprise controls')
@Controller('api/v0/mcp-oauth/callback')
@Public()
export class McpOAuthCallbackController {
  constructor(
    private readonly oauth: McpOAuth,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @ApiOperation({
    summary: "Finish an MCP server's OAuth sign-in (added)",
    description:
      "The redirect URI of every MCP OAuth sign-in: the authorization server's answer (`code` and `state`, or `error`). The code is exchanged once, within 10 minutes of the start, " +
      'and the browser is sent to the console (on `APP_URL`): `/settings/controls?mcpServer={serverName}&mcpOAuth=connected`, or `mcpOAuth=failed&reason=...`.',
  })
  @ApiResponse({ status: 303, description: 'To the console, with the outcome in the query.' })
  async finish(
    @QuerySchema(mcpOAuthSchemas, 'McpOAuthCallbackQuery') query: ApiSchema<'McpOAuthCallbackQuery'>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<void> {
    void reply.status(303).header('location', `${this.config.appUrl}${consolePath(await this.oauth.callback(query))}`);
  }
}

/** The controls page, with how the sign-in went. */
function consolePath(outcome: CallbackOutcome): string {
  const query = new URLSearchParams({
    ...(outcome.serverName ? { mcpServer: outcome.serverName } : {}),
    mcpOAuth: outcome.connected ? 'connected' : 'failed',
    ...(outcome.reason ? { reason: outcome.reason.slice(0, 300) } : {}),
  });
  return `/settings/controls?${query.toString()}`;
}

import type { ApiSchema } from '../../platform/http/api-schema';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadGatewayResponse,
  ApiBody,
  ApiConflictResponse,
  ApiDefaultResponse,
  ApiForbiddenResponse,
  ApiGatewayTimeoutResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AgentTokensOnly, Authenticated, CurrentPrincipal, Principal } from '../auth';
import { ref } from '../../platform/http/json-schema';
import { ApiErrorExamples, PASSED_ON, V0_ERROR } from '../../platform/http/openapi';
import { MessageSizedBody } from '../../platform/http/route-config';
import { AgentRelays } from './agent-relays.service';
import { McpRelayAnswer, McpRelayRequest, MCP_REQUEST_HEADERS } from './relay/mcp-relay';
import { enterpriseControlsSchemas } from './schemas/enterprise-controls.schemas';
import { PathIds } from '../../platform/http/path-ids';
import { EnterpriseControlsError, EnterpriseControlsErrorCode, mcpServerNotFound } from './domain/enterprise-controls.errors';

const RELAY_DESCRIPTION =
  "The Streamable HTTP transport of one of the organization's HTTP `mcpServers`, relayed: the server sends the request on to the MCP server's `url` " +
  "with the MCP server's `headers` added (their values never leave the server), so an agent's MCP client points at `{base_url}/api/v0/agent/mcp/{serverName}` " +
  "with its agent token as `Authorization: Bearer`. Only a computer's agent token may call it (403 for user API keys and JWTs); the caller's `mcpPolicy` applies " +
  '(403 `mcp_not_allowed` when MCP is off or `allowlist` does not list the server); an unknown server is 404, a stdio one 409. ' +
  "A `tools/call` (alone or in a batch) of a tool the server's `allowedTools` leaves out is 403 `mcp_tool_not_allowed` and nothing is sent; " +
  '`tools/list` answers are passed on whole (the agent offers only the allowed tools).\n\n' +
  '**OAuth.** When an admin signed in to the server (`/api/v0/organization/enterprise-controls/mcp-servers/{serverName}/oauth`), the relay adds ' +
  '`Authorization: Bearer` with the access token, refreshed a minute before it ends, and refreshed once and the request sent again when the server answers 401. ' +
  'A 401 with a `Bearer` challenge from a server no admin signed in to, or a sign-in that cannot be refreshed, is 409 `mcp_oauth_required`; agents never see a token or a challenge.\n\n' +
  '**Where it may go.** The rules of the model relay: the host is resolved once and every address must be public (loopback, private, link-local, ' +
  'metadata and other special addresses refused, this server too) unless the operator names the host in `MCP_RELAY_ALLOWED_HOSTS`; 403 `mcp_address_refused`, and nothing is sent. ' +
  'Redirects are not followed (502 `mcp_redirected`).\n\n' +
  "**What crosses.** Out: the body (a JSON-RPC message or batch), the caller's `mcp-session-id`, `mcp-protocol-version`, `accept`, `content-type` and `last-event-id`, " +
  "a fixed `user-agent` and the MCP server's `headers`; nothing else. Back: the status, `content-type`, `mcp-session-id`, and a JSON body or a `text/event-stream` " +
  'up to `MODEL_RELAY_MAX_RESPONSE_BYTES` (else 502 `mcp_answer_invalid`), with any header value of the MCP server quoted in it masked. No answer within ' +
  '`MODEL_RELAY_TIMEOUT_MS` is 504 `mcp_timed_out`; an unreachable server 503 `mcp_unreachable`. `GET` (the standalone event stream) answers 405: clients work without it.';

/** The relay passes on whatever status the MCP server answers, but a redirect (502). */
const PASSED_ON_DESCRIPTION =
  "Any other status the MCP server answers (its 404 for an MCP session it no longer knows, say), passed on with its body. The statuses listed here are also the relay's own answers, in this server's error body.";

/** The agent's side of the organization's MCP servers: the relay to HTTP ones, and how to launch stdio ones. */
@ApiTags('Agent channel')
@Controller('api/v0/agent/mcp')
@Authenticated()
@AgentTokensOnly()
@PathIds({ serverName: mcpServerNotFound })
@ApiErrorExamples(
  mcpServerNotFound('github'),
  new EnterpriseControlsError(
    EnterpriseControlsErrorCode.McpTransportMismatch,
    'MCP server "db" is a stdio server, not http; agents use it through /api/v0/agent/mcp/db/launch.',
    { serverName: 'db', transport: 'stdio' },
  ),
  new EnterpriseControlsError(EnterpriseControlsErrorCode.McpRedirected, 'MCP server "github" answered 302, a redirect; the relay does not follow redirects.'),
  new EnterpriseControlsError(EnterpriseControlsErrorCode.McpUnreachable, 'MCP server "github" could not be reached: ECONNREFUSED.'),
  new EnterpriseControlsError(EnterpriseControlsErrorCode.McpTimedOut, 'MCP server "github" did not answer within 600000 ms (MODEL_RELAY_TIMEOUT_MS).'),
)
export class McpRelayController {
  constructor(private readonly relays: AgentRelays) {}

  @Post(':serverName')
  @MessageSizedBody()
  @HttpCode(200)
  @ApiOperation({ summary: 'Send an MCP request to an HTTP MCP server (added)', description: RELAY_DESCRIPTION })
  @ApiBody({ schema: ref('McpRelayBody') })
  @ApiOkResponse({
    description: "The MCP server's answer to a request (its own status, passed on): JSON, or an event stream.",
    content: { 'application/json': { schema: { type: 'object' } }, 'text/event-stream': { schema: { type: 'string' } } },
  })
  @ApiAcceptedResponse({
    description: "The MCP server took a notification or a response (every client's `notifications/initialized`, say): no body, as the transport answers them.",
  })
  @ApiDefaultResponse({ description: PASSED_ON_DESCRIPTION, content: PASSED_ON })
  @ApiForbiddenResponse({ description: "Not an agent token; the caller's mcpPolicy refuses the server; or the server's address is refused.", schema: V0_ERROR })
  @ApiNotFoundResponse({ description: 'No MCP server with that name.', schema: V0_ERROR })
  @ApiConflictResponse({
    description:
      'The server is a stdio one: agents launch it themselves (`mcp_transport_mismatch`); or it asks for an OAuth sign-in that no admin made or that must be made again (`mcp_oauth_required`).',
    schema: V0_ERROR,
  })
  @ApiBadGatewayResponse({ description: 'The MCP server redirected, or answered something other than JSON or an event stream, or too much.', schema: V0_ERROR })
  @ApiServiceUnavailableResponse({ description: "The MCP server cannot be reached, or its headers' values cannot be decrypted.", schema: V0_ERROR })
  @ApiGatewayTimeoutResponse({ description: 'The MCP server did not answer within `MODEL_RELAY_TIMEOUT_MS`.', schema: V0_ERROR })
  async post(
    @CurrentPrincipal() principal: Principal,
    @Param('serverName') serverName: string,
    @Body(enterpriseControlsSchemas.pipe('McpRelayBody')) body: ApiSchema<'McpRelayBody'>,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<unknown> {
    return this.relay(principal, serverName, 'POST', request, reply, body);
  }

  @Delete(':serverName')
  @HttpCode(200)
  @ApiOperation({
    summary: 'End an MCP session on an HTTP MCP server (added)',
    description: "Relays the client's `DELETE` (with its `mcp-session-id`) as `POST` relays requests.",
  })
  @ApiOkResponse({ description: "The MCP server's answer, its status passed on: its JSON, or nothing.", content: PASSED_ON })
  @ApiDefaultResponse({ description: PASSED_ON_DESCRIPTION, content: PASSED_ON })
  @ApiForbiddenResponse({ description: "Not an agent token; the caller's mcpPolicy refuses the server; or the server's address is refused.", schema: V0_ERROR })
  @ApiNotFoundResponse({ description: 'No MCP server with that name.', schema: V0_ERROR })
  @ApiConflictResponse({ description: 'The server is a stdio one.', schema: V0_ERROR })
  @ApiBadGatewayResponse({ description: 'The MCP server redirected, or answered something other than JSON or nothing, or too much.', schema: V0_ERROR })
  @ApiServiceUnavailableResponse({ description: "The MCP server cannot be reached, or its headers' values cannot be decrypted.", schema: V0_ERROR })
  @ApiGatewayTimeoutResponse({ description: 'The MCP server did not answer within `MODEL_RELAY_TIMEOUT_MS`.', schema: V0_ERROR })
  async delete(
    @CurrentPrincipal() principal: Principal,
    @Param('serverName') serverName: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<unknown> {
    return this.relay(principal, serverName, 'DELETE', request, reply);
  }

  @Get(':serverName/launch')
  @ApiOperation({
    summary: 'Read how to start a stdio MCP server (added)',
    description:
      "How an agent starts one of the organization's stdio `mcpServers` on its computer: `command`, `args` and `env`, the env values in plain text. " +
      "This is the one way a stdio server's secrets reach the computer that runs it (everywhere else they are masked). Only a computer's agent token may call it; " +
      "the caller's `mcpPolicy` applies (403 `mcp_not_allowed`); an unknown server is 404, an HTTP one 409 (agents reach those through the relay).",
  })
  @ApiOkResponse({ schema: ref('McpLaunch') })
  @ApiForbiddenResponse({ description: "Not an agent token, or the caller's mcpPolicy refuses the server.", schema: V0_ERROR })
  @ApiNotFoundResponse({ description: 'No MCP server with that name.', schema: V0_ERROR })
  @ApiConflictResponse({ description: 'The server is an HTTP one: agents reach it through the relay.', schema: V0_ERROR })
  @ApiServiceUnavailableResponse({ description: "The server's env values cannot be decrypted.", schema: V0_ERROR })
  @ApiErrorExamples(
    new EnterpriseControlsError(
      EnterpriseControlsErrorCode.McpTransportMismatch,
      'MCP server "github" is a http server, not stdio; agents use it through /api/v0/agent/mcp/github (the relay).',
      { transport: 'http' },
    ),
    new EnterpriseControlsError(
      EnterpriseControlsErrorCode.SecretUnreadable,
      'A stored secret of MCP server "db" cannot be decrypted with SECRETS_KEY; an operator must restore the key it was encrypted with.',
    ),
  )
  launch(@CurrentPrincipal() principal: Principal, @Param('serverName') serverName: string): Promise<ApiSchema<'McpLaunch'>> {
    return this.relays.mcpLaunch(principal, serverName);
  }

  private async relay(
    principal: Principal,
    serverName: string,
    method: McpRelayRequest['method'],
    request: FastifyRequest,
    reply: FastifyReply,
    body?: unknown,
  ): Promise<unknown> {
    const headers: Record<string, string> = {};
    for (const name of MCP_REQUEST_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    // The request to the MCP server ends when the caller goes away.
    const caller = new AbortController();
    reply.raw.once('close', () => caller.abort());
    const answer: McpRelayAnswer = await this.relays.relayMcp(principal, serverName, { method, headers, body, signal: caller.signal });
    void reply.status(answer.status).headers(answer.headers);
    if ('stream' in answer) {
      void reply.header('x-accel-buffering', 'no');
      return answer.stream;
    }
    return answer.body;
  }
}

import type { ApiSchema } from '../../platform/http/api-schema';
import { applyDecorators, Body, Controller, Get, Headers, HttpCode, Param, Patch, Post, Res } from '@nestjs/common';
import {
  ApiBadGatewayResponse,
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiDefaultResponse,
  ApiForbiddenResponse,
  ApiGatewayTimeoutResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiPreconditionFailedResponse,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AcceptsComputerTokens, AgentTokensOnly, Authenticated, CurrentPrincipal, Principal, Role } from '../auth';
import { QuerySchema, ref } from '../../platform/http/json-schema';
import { ApiErrorExamples, ApiRequestExample, PASSED_ON, V0_ERROR } from '../../platform/http/openapi';
import { pageSize } from '../../platform/http/pagination';
import { MessageSizedBody } from '../../platform/http/route-config';
import { noEffectWarnings } from '../../platform/http/no-effect';
import { NO_EFFECT_SETTINGS } from './domain/no-effect-settings';
import { AgentPolicyView } from './domain/agent-policy';
import { etagOf, parseIfMatch } from './domain/if-match';
import { ControlRevisionView, ControlsView } from './domain/views';
import { EnterpriseControlsService } from './enterprise-controls.service';
import { AgentRelays, RelayApi } from './agent-relays.service';
import { enterpriseControlsSchemas } from './schemas/enterprise-controls.schemas';
import { PathIds } from '../../platform/http/path-ids';
import { customModelNotFound, EnterpriseControlsError, EnterpriseControlsErrorCode, revisionNotFound } from './domain/enterprise-controls.errors';

const ADMINS = [Role.Owner, Role.Manager];

/** A change, or a relayed call, needing a secret that cannot be decrypted. */
const SECRET_UNREADABLE = new EnterpriseControlsError(
  EnterpriseControlsErrorCode.SecretUnreadable,
  'A stored secret of custom model "custom:acme-llama" cannot be decrypted with SECRETS_KEY; an operator must restore the key it was encrypted with.',
);

@ApiTags('Enterprise controls')
@Controller('api/v0/organization/enterprise-controls')
@Authenticated(...ADMINS)
@PathIds({ revision: revisionNotFound })
@ApiErrorExamples(revisionNotFound('7'))
export class EnterpriseControlsController {
  constructor(private readonly controls: EnterpriseControlsService) {}

  @Get()
  @ApiOperation({
    summary: 'Read the enterprise controls',
    description:
      'Not in the spec; added. The settings in force: the latest revision, or revision 0 (the defaults) before the first change. ' +
      "Secrets (custom models' keys, header values and cloud credentials; MCP servers' `headers` and `env` values) are masked. `ETag` names the revision, for `If-Match` on a change.",
  })
  @ApiOkResponse({ schema: ref('EnterpriseControls'), headers: { ETag: { description: 'The revision, quoted: `"3"`.', schema: { type: 'string' } } } })
  async read(@CurrentPrincipal() principal: Principal, @Res({ passthrough: true }) reply: FastifyReply): Promise<ControlsView> {
    const controls = await this.controls.current(principal);
    void reply.header('etag', etagOf(controls.revision));
    return controls;
  }

  @Patch()
  @ApiOperation({
    summary: 'Change the enterprise controls',
    description:
      'Not in the spec; added. The body `{settings}` is a JSON Merge Patch (RFC 7396) over the current settings, sent as `application/json` or ' +
      '`application/merge-patch+json`. The patched settings are checked whole (400 names every bad path, e.g. `settings.sandbox.network.httpProxyPort`). ' +
      'A change that alters something becomes the next revision, with you as its user; one that alters nothing creates none and answers the current revision. ' +
      'With `If-Match` (the `ETag` of a revision) the change applies only on that revision, else 412; without it, concurrent changes land one after the other. ' +
      'A change that sets a setting this server does not act on (docs/controls.md; marked `x-no-effect` in the schema) is made, and `warnings` names it.',
  })
  @ApiHeader({ name: 'If-Match', required: false, description: 'The revision the change is based on, as `ETag` gave it (`"3"`), or `*`.' })
  @ApiBody({ schema: ref('ChangeEnterpriseControlsBody') })
  @ApiRequestExample({ settings: { sessionRetentionDays: 90 } })
  @ApiOkResponse({ schema: ref('EnterpriseControls'), headers: { ETag: { description: 'The revision now in force.', schema: { type: 'string' } } } })
  @ApiBadRequestResponse({ description: 'Invalid settings; `detail` names the first problem, `metadata.errors` lists all.', schema: V0_ERROR })
  @ApiPreconditionFailedResponse({ description: '`If-Match` names another revision than the one in force (`metadata.currentRevision`).', schema: V0_ERROR })
  @ApiServiceUnavailableResponse({
    description: 'A stored secret the change keeps cannot be decrypted with `SECRETS_KEY` (`secret_unreadable`); nothing is changed.',
    schema: V0_ERROR,
  })
  @ApiErrorExamples(
    new EnterpriseControlsError(
      EnterpriseControlsErrorCode.RevisionMismatch,
      'The controls are at revision 3, not 2 as If-Match expects: someone changed them since you read them. Read them again and reapply your change.',
      { currentRevision: 3 },
    ),
    SECRET_UNREADABLE,
  )
  async change(
    @CurrentPrincipal() principal: Principal,
    @Body(enterpriseControlsSchemas.pipe('ChangeEnterpriseControlsBody')) body: ApiSchema<'ChangeEnterpriseControlsBody'>,
    @Headers('if-match') ifMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ControlsView> {
    const { controls } = await this.controls.change(principal, body.settings, parseIfMatch(ifMatch));
    void reply.header('etag', etagOf(controls.revision));
    const warnings = noEffectWarnings(body.settings, NO_EFFECT_SETTINGS);
    return warnings.length > 0 ? { ...controls, warnings } : controls;
  }

  @Get('history')
  @ApiOperation({
    summary: 'List enterprise control changes',
    description: 'Every revision of the controls, newest first, each with the whole settings snapshot (keys masked) and the user who made it.',
  })
  @ApiOkResponse({ schema: ref('EnterpriseControlChangeList') })
  @ApiBadRequestResponse({ description: 'Invalid `limit` or `cursor`.', schema: V0_ERROR })
  async history(
    @CurrentPrincipal() principal: Principal,
    @QuerySchema(enterpriseControlsSchemas, 'ControlHistoryQuery') query: ApiSchema<'ControlHistoryQuery'>,
  ): Promise<ApiSchema<'EnterpriseControlChangeList'>> {
    const page = await this.controls.history(principal, query.cursor, pageSize(query));
    return { changes: page.items, pagination: page.pagination };
  }

  @Get('history/:revision')
  @ApiOperation({
    summary: 'Read one enterprise control change',
    description: 'Not in the spec; added. The change, and `diff`: the RFC 6902 operations from the revision before it (the defaults, for revision 1).',
  })
  @ApiOkResponse({ schema: ref('EnterpriseControlRevision') })
  @ApiNotFoundResponse({ description: 'No such revision.', schema: V0_ERROR })
  revision(@CurrentPrincipal() principal: Principal, @Param('revision') revision: string): Promise<ControlRevisionView> {
    return this.controls.revision(principal, revision);
  }
}

/** What both relay endpoints do with where a call may go and what crosses. */
const RELAY_RULES =
  "**Where it may go.** The model's host is resolved once and every address must be public unicast: loopback, private, carrier-grade NAT, link-local, " +
  'unique-local, multicast, unspecified, reserved and cloud metadata addresses are refused (IPv4, IPv6, IPv4-mapped and NAT64 forms, and numeric spellings ' +
  'such as `http://2130706433/`), as is this server itself; the connection goes to the address checked, never to a second lookup. The operator names ' +
  'self-hosted models on private networks in `MODEL_RELAY_ALLOWED_HOSTS`. A refused address answers 403 `model_address_refused`, and nothing is sent.\n\n' +
  "**What crosses.** Out: the body, `content-type`, `accept`, a fixed `user-agent`, the key and `extraHeaders` (and, to Anthropic models, `anthropic-version` and `anthropic-beta`); nothing else of the caller's request. " +
  "Back: the vendor's status, its JSON body (or, for `stream: true` answered with `text/event-stream`, the events as they come) up to " +
  '`MODEL_RELAY_MAX_RESPONSE_BYTES`, and the headers `content-type`, `retry-after`, `x-request-id`, `request-id`, `openai-processing-ms`, `x-ratelimit-*`, `anthropic-ratelimit-*`. ' +
  "Any of the model's secrets quoted in the answer is masked. Redirects are not followed (502 `model_redirected`); an answer that is not JSON or is too large is 502 " +
  '`model_answer_invalid`; no answer within `MODEL_RELAY_TIMEOUT_MS` is 504 `model_timed_out`; an unreachable model is 503 `model_unreachable`.\n\n';

/** The agent's side: what it must obey, and the relay to the organization's models. */
@ApiTags('Agent channel')
@Controller('api/v0/agent')
@PathIds({ customModelId: customModelNotFound })
@ApiErrorExamples(customModelNotFound('custom:acme-llama'))
export class AgentPolicyController {
  constructor(
    private readonly controls: EnterpriseControlsService,
    private readonly relays: AgentRelays,
  ) {}

  @Get('policy')
  @Authenticated(Role.Owner, Role.Manager, Role.Member)
  @AcceptsComputerTokens()
  @ApiOperation({
    summary: 'Read the agent policy',
    description:
      'The enterprise controls an agent working for the caller must obey (commands, sandbox, network, MCP, plugins, models), as one document. ' +
      "Accepts computers' agent tokens (the policy of the computer's owner) and the credentials of owners, managers and members; guests get 403. " +
      "Custom models' secrets (`apiKey`, `extraHeaders` values, the credentials of `cloudModelConfig`) and MCP servers' `headers` and `env` values are masked here too; " +
      '`mcpServers` is `[]` when the organization defines none.',
  })
  @ApiOkResponse({ schema: ref('AgentPolicy') })
  policy(@CurrentPrincipal() principal: Principal): Promise<AgentPolicyView> {
    return this.controls.agentPolicy(principal);
  }

  @Get('models/:customModelId/cloud')
  @Authenticated()
  @AgentTokensOnly()
  @ApiOperation({
    summary: "Read how to reach a custom model with the computer's cloud credentials (added)",
    description:
      "The `cloudModelConfig` of one of the organization's `customModels`, its commands (`cloudAuthRefresh`, `cloudCredentialExport`) in plain text: " +
      'an agent calls `cloudBaseUrl` itself, with credentials that `cloudCredentialExport` prints on its computer (AWS credential-process JSON, signed ' +
      'with Signature Version 4 for Bedrock; otherwise a bearer token), running `cloudAuthRefresh` when they fail. This is the one place those commands are revealed. ' +
      "Only a computer's agent token may call it; the caller's `modelPolicy` applies (403 naming the rule); an unknown model is 404, one without `cloudBaseUrl` 409 `model_not_cloud`.",
  })
  @ApiOkResponse({ schema: ref('CloudModelAccess') })
  @ApiForbiddenResponse({ description: "Not an agent token, or the caller's modelPolicy refuses the model.", schema: V0_ERROR })
  @ApiNotFoundResponse({ description: 'No custom model with that id.', schema: V0_ERROR })
  @ApiConflictResponse({ description: 'The model has no cloudModelConfig.cloudBaseUrl: agents reach it through the relay.', schema: V0_ERROR })
  @ApiErrorExamples(
    new EnterpriseControlsError(
      EnterpriseControlsErrorCode.ModelNotCloud,
      'Custom model "team-model" has no cloudModelConfig.cloudBaseUrl: agents reach it through the relay, /api/v0/agent/models/team-model.',
      { customModelId: 'team-model' },
    ),
  )
  cloudAccess(@CurrentPrincipal() principal: Principal, @Param('customModelId') customModelId: string): Promise<ApiSchema<'CloudModelAccess'>> {
    return this.relays.cloudModelAccess(principal, customModelId);
  }

  @Post('models/:customModelId/chat/completions')
  @Authenticated()
  @AgentTokensOnly()
  // A whole conversation, images included, rides in a Chat Completions request.
  @MessageSizedBody()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Relay a chat completion to a custom model (added)',
    description:
      "An OpenAI-compatible Chat Completions request to one of the organization's `customModels`, sent on by the server to `{baseUrl}/chat/completions` " +
      "with the model's key as `Authorization` (the key never leaves the server), its `extraHeaders`, `extraArgs` and `maxOutputTokens`, and `model` set to the custom model's. " +
      "Only a computer's agent token may call it (403 for user API keys and JWTs), and the caller's `modelPolicy` applies (403 naming the rule). " +
      'A model whose `provider` is `anthropic` is relayed at `.../messages` instead: called here, it answers 400 `model_api_mismatch`.\n\n' +
      RELAY_RULES +
      'This is how agents use custom models: point an OpenAI-compatible client at `{base_url}/api/v0/agent/models/{customModelId}` with the agent token as its key.',
  })
  @ApiBody({ schema: ref('ModelRelayBody') })
  @RelayAnswers()
  relay(
    @CurrentPrincipal() principal: Principal,
    @Param('customModelId') customModelId: string,
    @Body(enterpriseControlsSchemas.pipe('ModelRelayBody')) body: ApiSchema<'ModelRelayBody'>,
    @Headers() headers: Record<string, string | string[] | undefined>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<unknown> {
    return this.relayTo('chat/completions', principal, customModelId, body, headers, reply);
  }

  @Post('models/:customModelId/messages')
  @Authenticated()
  @AgentTokensOnly()
  @MessageSizedBody()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Relay Anthropic messages to a custom model (added)',
    description:
      "An Anthropic Messages request to one of the organization's `customModels` whose `provider` is `anthropic`, sent on by the server to " +
      '`{baseUrl}/v1/messages` when `baseUrl` has no path (`https://api.anthropic.com`), else to `{baseUrl}/messages` (`https://gateway.example.com/anthropic/v1` ' +
      "gives `.../anthropic/v1/messages`), with the model's key as `x-api-key` (the key never leaves the server), `anthropic-version` (the caller's, " +
      "else 2023-06-01) and the caller's `anthropic-beta` if it sends one, its `extraHeaders`, `extraArgs` and `maxOutputTokens` (as `max_tokens` when the body has none), " +
      "and `model` set to the custom model's. Only a computer's agent token may call it, as `Authorization: Bearer` (403 for user API keys and JWTs), and the " +
      "caller's `modelPolicy` applies (403 naming the rule). A model of another `provider` answers 400 `model_api_mismatch`: it is relayed at `.../chat/completions`.\n\n" +
      RELAY_RULES +
      'This is how agents use Anthropic custom models: point an Anthropic client at `{base_url}/api/v0/agent/models/{customModelId}` with the agent token as a bearer token.',
  })
  @ApiBody({ schema: ref('ModelRelayMessagesBody') })
  @RelayAnswers()
  messages(
    @CurrentPrincipal() principal: Principal,
    @Param('customModelId') customModelId: string,
    @Body(enterpriseControlsSchemas.pipe('ModelRelayMessagesBody')) body: ApiSchema<'ModelRelayMessagesBody'>,
    @Headers() headers: Record<string, string | string[] | undefined>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<unknown> {
    return this.relayTo('messages', principal, customModelId, body, headers, reply);
  }

  private async relayTo(
    api: RelayApi,
    principal: Principal,
    customModelId: string,
    body: Record<string, unknown>,
    headers: Record<string, string | string[] | undefined>,
    reply: FastifyReply,
  ): Promise<unknown> {
    // The call to the model ends when the caller goes away.
    const caller = new AbortController();
    reply.raw.once('close', () => caller.abort());
    const answer = await this.relays.relayModelCall(principal, customModelId, api, body, headers, caller.signal);
    void reply.status(answer.status).headers(answer.headers);
    if ('stream' in answer) {
      // Proxies in between must not hold events back.
      void reply.header('x-accel-buffering', 'no');
      return answer.stream;
    }
    return answer.json;
  }
}

/** The answers both relay endpoints document. */
function RelayAnswers(): MethodDecorator {
  return applyDecorators(
    ApiOkResponse({
      description: "The model's answer (its own status, passed on), as JSON or as `text/event-stream` when streamed.",
      content: { 'application/json': { schema: { type: 'object' } }, 'text/event-stream': { schema: { type: 'string' } } },
    }),
    ApiDefaultResponse({
      description:
        "Any other status the model answers (its 529, say), passed on with its JSON body. The statuses listed here are also the relay's own answers, in this server's error body, and the model's when it answers them.",
      content: PASSED_ON,
    }),
    ApiBadRequestResponse({
      description: "The body is not a JSON object, or the endpoint is not the one of the model's `provider` (`model_api_mismatch`).",
      schema: V0_ERROR,
    }),
    ApiForbiddenResponse({
      description: "Not an agent token; the caller's model policy refuses the model; or the model's address is refused.",
      schema: V0_ERROR,
    }),
    ApiNotFoundResponse({ description: 'No custom model with that id.', schema: V0_ERROR }),
    ApiBadGatewayResponse({
      description: 'The model redirected, or answered something other than JSON, or more than the relay passes on.',
      schema: V0_ERROR,
    }),
    ApiServiceUnavailableResponse({ description: 'The model cannot be reached, or its secrets cannot be decrypted.', schema: V0_ERROR }),
    ApiGatewayTimeoutResponse({ description: 'The model did not answer within `MODEL_RELAY_TIMEOUT_MS`.', schema: V0_ERROR }),
    ApiErrorExamples(
      new EnterpriseControlsError(
        EnterpriseControlsErrorCode.ModelApiMismatch,
        'Custom model "custom:acme-claude" has provider anthropic: call /api/v0/agent/models/custom:acme-claude/messages, not /chat/completions.',
        { customModelId: 'custom:acme-claude', provider: 'anthropic', endpoint: 'messages' },
      ),
      new EnterpriseControlsError(EnterpriseControlsErrorCode.ModelAnswerInvalid, 'The model answered something other than JSON.'),
      SECRET_UNREADABLE,
      new EnterpriseControlsError(EnterpriseControlsErrorCode.ModelTimedOut, 'The model did not answer within MODEL_RELAY_TIMEOUT_MS (600000 ms).'),
    ),
  );
}

import { Body, Controller, Get, Headers, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiExtraModels,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiPreconditionFailedResponse,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AcceptsComputerTokens, Authenticated, CurrentPrincipal, Principal, Role } from '../auth';
import { ref } from '../../platform/http/json-schema';
import { validationError } from '../../platform/http/validation';
import { V0ErrorSchema } from '../../platform/http/openapi';
import { PageQueryDto, PaginationDto } from '../../platform/http/pagination';
import { MessageSizedBody } from '../../platform/http/route-config';
import { AgentPolicyView } from './domain/agent-policy';
import { etagOf, parseIfMatch } from './domain/if-match';
import { ControlChangeView, ControlRevisionView, ControlsView } from './domain/views';
import { EnterpriseControlsService } from './enterprise-controls.service';
import { enterpriseControlsSchemas } from './schemas/enterprise-controls.schemas';

const ADMINS = [Role.Owner, Role.Manager];

@ApiTags('Enterprise controls')
@ApiExtraModels(PaginationDto)
@Controller('api/v0/organization/enterprise-controls')
@Authenticated(...ADMINS)
export class EnterpriseControlsController {
  constructor(private readonly controls: EnterpriseControlsService) {}

  @Get()
  @ApiOperation({
    summary: 'Read the enterprise controls',
    description:
      'Not in the spec; added. The settings in force: the latest revision, or revision 0 (the defaults) before the first change. ' +
      'Custom models\' `apiKey` values are masked. `ETag` names the revision, for `If-Match` on a change.',
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
      'With `If-Match` (the `ETag` of a revision) the change applies only on that revision, else 412; without it, concurrent changes land one after the other.',
  })
  @ApiHeader({ name: 'If-Match', required: false, description: 'The revision the change is based on, as `ETag` gave it (`"3"`), or `*`.' })
  @ApiBody({ schema: ref('ChangeEnterpriseControlsBody') })
  @ApiOkResponse({ schema: ref('EnterpriseControls'), headers: { ETag: { description: 'The revision now in force.', schema: { type: 'string' } } } })
  @ApiBadRequestResponse({ description: 'Invalid settings; `detail` names the first problem, `metadata.errors` lists all.', type: V0ErrorSchema })
  @ApiPreconditionFailedResponse({ description: '`If-Match` names another revision than the one in force (`metadata.currentRevision`).', type: V0ErrorSchema })
  async change(
    @CurrentPrincipal() principal: Principal,
    @Body(enterpriseControlsSchemas.pipe('ChangeEnterpriseControlsBody')) body: { settings: Record<string, unknown> },
    @Headers('if-match') ifMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ControlsView> {
    const { controls } = await this.controls.change(principal, body.settings, parseIfMatch(ifMatch));
    void reply.header('etag', etagOf(controls.revision));
    return controls;
  }

  @Get('history')
  @ApiOperation({
    summary: 'List enterprise control changes',
    description: 'Every revision of the controls, newest first, each with the whole settings snapshot (keys masked) and the user who made it.',
  })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['changes', 'pagination'],
      properties: { changes: { type: 'array', items: ref('EnterpriseControlChange') }, pagination: { $ref: getSchemaPath(PaginationDto) } },
    },
  })
  @ApiBadRequestResponse({ description: 'Invalid `limit` or `cursor`.', type: V0ErrorSchema })
  async history(@CurrentPrincipal() principal: Principal, @Query() query: PageQueryDto): Promise<{ changes: ControlChangeView[]; pagination: PaginationDto }> {
    const page = await this.controls.history(principal, query.cursor, query.pageSize);
    return { changes: page.items, pagination: page.pagination };
  }

  @Get('history/:revision')
  @ApiOperation({
    summary: 'Read one enterprise control change',
    description: 'Not in the spec; added. The change, and `diff`: the RFC 6902 operations from the revision before it (the defaults, for revision 1).',
  })
  @ApiOkResponse({ schema: ref('EnterpriseControlRevision') })
  @ApiNotFoundResponse({ description: 'No such revision.', type: V0ErrorSchema })
  revision(@CurrentPrincipal() principal: Principal, @Param('revision') revision: string): Promise<ControlRevisionView> {
    return this.controls.revision(principal, revision);
  }
}

/** The agent's side: what it must obey. */
@ApiTags('Agent channel')
@Controller('api/v0/agent')
@Authenticated()
@AcceptsComputerTokens()
export class AgentPolicyController {
  constructor(private readonly controls: EnterpriseControlsService) {}

  @Get('policy')
  @ApiOperation({
    summary: 'Read the agent policy',
    description:
      'The enterprise controls an agent working for the caller must obey (commands, sandbox, network, MCP, plugins, models), as one document. ' +
      'Accepts computers\' agent tokens (the policy of the computer\'s owner) and any user\'s credentials. Custom models\' keys are masked here too.',
  })
  @ApiOkResponse({ schema: ref('AgentPolicy') })
  policy(@CurrentPrincipal() principal: Principal): Promise<AgentPolicyView> {
    return this.controls.agentPolicy(principal);
  }

  @Post('models/:customModelId/chat/completions')
  // A whole conversation, images included, rides in a Chat Completions request.
  @MessageSizedBody()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Relay a chat completion to a custom model (added)',
    description:
      'An OpenAI-compatible Chat Completions request to one of the organization\'s `customModels`, sent on by the server with the model\'s key ' +
      '(which never leaves the server), `extraHeaders`, `extraArgs` and `maxOutputTokens`, and `model` set to the custom model\'s. The caller\'s ' +
      '`modelPolicy` applies (403 naming the rule). The vendor\'s status and body are answered as they are; 503 when it cannot be reached. ' +
      'This is how agents use custom models: point an OpenAI-compatible client at `{base_url}/api/v0/agent/models/{customModelId}` with the agent token as its key.',
  })
  @ApiBody({ schema: { type: 'object', description: 'A Chat Completions request body (`messages`, `tools`, ...); `model` is replaced.' } })
  @ApiNotFoundResponse({ description: 'No custom model with that id.', type: V0ErrorSchema })
  async relay(
    @CurrentPrincipal() principal: Principal,
    @Param('customModelId') customModelId: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<unknown> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw validationError([{ field: 'body', message: 'must be a JSON object (a Chat Completions request)' }]);
    const answer = await this.controls.relayChatCompletion(principal, customModelId, body as Record<string, unknown>);
    void reply.status(answer.status);
    return answer.body;
  }
}

import type { Readable } from 'node:stream';
import { Injectable } from '@nestjs/common';
import { AllowedIps } from '../../agent/sandbox/network-policy';
import { AppConfig } from '../../config/app-config';
import { InFlight } from '../../platform/rate-limit/in-flight';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { Principal, securityActorOf } from '../auth';
import { secretsOf } from './domain/model-secrets';
import { disallowedToolCall, mcpPolicyRefusal, mcpSecretsOf } from './domain/mcp-servers';
import { customModelNotFound, EnterpriseControlsError, EnterpriseControlsErrorCode, mcpServerNotFound } from './domain/enterprise-controls.errors';
import { checkModel, fastRequestRefusal } from './domain/model-policy';
import { CLOUD_MODEL_CONFIG_FIELDS, CustomModel, CustomModelProvider, McpServer } from './domain/settings';
import { EnterpriseControlsService } from './enterprise-controls.service';
import { ModelRelay, RelayAnswer } from './relay/model-relay';
import { RelayFailure, RelayFailureReason } from './relay/relay-exchange';
import { McpRelay, McpRelayAnswer, McpRelayRequest } from './relay/mcp-relay';
import { McpOAuth, oauthRequired } from './mcp-oauth/mcp-oauth.service';

/**
 * What agents reach through the server with the organization's secrets: its custom models (the model
 * relay) and its MCP servers (the MCP relay, and how to launch a stdio one). Secrets are revealed only
 * here, in memory, for the one call; the caller's policy applies first.
 */
@Injectable()
export class AgentRelays {
  /** Relayed calls in progress on this instance, per computer. */
  private readonly relays = new InFlight();

  constructor(
    private readonly controls: EnterpriseControlsService,
    private readonly relay: ModelRelay,
    private readonly mcpRelay: McpRelay,
    private readonly oauth: McpOAuth,
    private readonly config: AppConfig,
  ) {}

  /**
   * Relays a call to one of the organization's custom models in the API its `provider` serves (an
   * OpenAI-compatible chat completion, or Anthropic Messages), so an agent can use it without ever
   * holding its secrets: the server adds the key (decrypted only here, in memory), `extraHeaders`,
   * `extraArgs` and `maxOutputTokens`, and sets `model`. The caller's model policy applies; where the
   * call may go is the relay's (ModelRelay). A call in the other API than the model's is a 400.
   */
  async relayModelCall(
    principal: Principal,
    customModelId: string,
    api: RelayApi,
    body: Record<string, unknown>,
    callerHeaders: Record<string, string | string[] | undefined>,
    signal: AbortSignal,
  ): Promise<RelayAnswer> {
    const { settings } = await this.controls.inForce(principal.organizationId);
    const model = settings.customModels.find((candidate) => candidate.id === customModelId);
    if (!model) {
      throw customModelNotFound(customModelId);
    }
    const refusal = checkModel(settings, principal.userId, customModelId) ?? fastRequestRefusal(settings, principal.userId, body);
    if (refusal) throw new EnterpriseControlsError(EnterpriseControlsErrorCode.ModelNotAllowed, refusal.detail, { rule: refusal.rule, model: customModelId });
    const provider = model.provider ?? 'generic-chat-completion-api';
    if (RELAY_APIS[provider] !== api) {
      throw new EnterpriseControlsError(
        EnterpriseControlsErrorCode.ModelApiMismatch,
        `Custom model "${customModelId}" has provider ${provider}: call /api/v0/agent/models/${customModelId}/${RELAY_APIS[provider]}, not /${api}.`,
        { customModelId, provider, endpoint: RELAY_APIS[provider] },
      );
    }
    const [revealed] = this.controls.reveal(principal.organizationId, { ...settings, customModels: [model] }).customModels;
    const payload = {
      ...revealed.extraArgs,
      ...body,
      model: revealed.model,
      ...(revealed.maxOutputTokens !== undefined && body.max_tokens === undefined ? { max_tokens: revealed.maxOutputTokens } : {}),
    };
    const headers = api === 'messages' ? anthropicHeaders(revealed, callerHeaders) : chatCompletionsHeaders(revealed);
    const url = api === 'messages' ? messagesUrl(revealed.baseUrl) : chatCompletionsUrl(revealed.baseUrl);
    try {
      const allowedIps = AllowedIps.of(settings);
      return await this.inRelaySlot(principal, () => this.relay.send({ url, headers, payload, secrets: secretsOf(revealed), signal, allowedIps }));
    } catch (error) {
      if (!(error instanceof RelayFailure)) throw error;
      if (error.reason === 'refused') logSecurityEvent('relay.destination_refused', securityActorOf(principal), { customModelId, reason: error.message });
      const { code } = RELAY_FAILURES[error.reason];
      const detail = `Custom model "${customModelId}" ${error.reason === 'refused' ? `is refused by the relay's address policy: ${error.message}` : error.message}.`;
      throw new EnterpriseControlsError(code, detail, {
        customModelId,
        ...(error.upstreamStatus === undefined ? {} : { upstreamStatus: error.upstreamStatus }),
      });
    }
  }

  /**
   * Relays an agent's MCP request (Streamable HTTP) to one of the organization's HTTP MCP servers, so
   * the agent never holds the server's header values: the server adds them (decrypted only here, in
   * memory). The caller's `mcpPolicy` applies; where the request may go is the relay's (McpRelay).
   */
  async relayMcp(principal: Principal, serverName: string, request: McpRelayRequest): Promise<McpRelayAnswer> {
    const { server, allowedIps } = await this.mcpServerFor(principal, serverName, 'http');
    const tool = disallowedToolCall(server, request.body);
    if (tool !== undefined) {
      logSecurityEvent('relay.mcp_tool_refused', securityActorOf(principal), { mcpServer: serverName, tool });
      throw new EnterpriseControlsError(
        EnterpriseControlsErrorCode.McpToolNotAllowed,
        `MCP server "${serverName}" allows only the tools its allowedTools lists, and not "${tool}"; nothing was sent.`,
        { serverName, tool },
      );
    }
    try {
      return await this.inRelaySlot(principal, async () => {
        const send = (token: string | null) =>
          this.mcpRelay.send(
            new URL(server.url),
            { ...server.headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
            [...mcpSecretsOf(server), ...(token ? [token] : [])],
            allowedIps,
            request,
          );
        const token = await this.oauth.accessToken(principal.organizationId, server, allowedIps);
        let answer = await send(token);
        // A token the server refuses is refreshed once, and the request sent again (its body is still in memory).
        if (token && answer.status === 401 && !('stream' in answer))
          answer = await send(await this.oauth.accessToken(principal.organizationId, server, allowedIps, token));
        if (answer.status === 401 && !token && /^\s*bearer\b/i.test(answer.headers['www-authenticate'] ?? '')) {
          if ('stream' in answer) answer.stream.destroy();
          throw oauthRequired(serverName);
        }
        // The agent never signs in itself: the challenge stays here.
        delete answer.headers['www-authenticate'];
        return answer;
      });
    } catch (error) {
      if (!(error instanceof RelayFailure)) throw error;
      if (error.reason === 'refused')
        logSecurityEvent('relay.destination_refused', securityActorOf(principal), { mcpServer: serverName, reason: error.message });
      const detail = `MCP server "${serverName}" ${error.reason === 'refused' ? `is refused by the relay's address policy: ${error.message}` : error.message}.`;
      throw new EnterpriseControlsError(MCP_RELAY_FAILURES[error.reason], detail, {
        serverName,
        ...(error.upstreamStatus === undefined ? {} : { upstreamStatus: error.upstreamStatus }),
      });
    }
  }

  /**
   * How the caller's agent starts one of the organization's stdio MCP servers, `env` revealed: the one
   * way a stdio server's secrets reach the computer that runs it. The caller's `mcpPolicy` applies.
   */
  /**
   * How an agent reaches a custom model with its computer's own cloud credentials: the model's `cloudModelConfig`,
   * its commands revealed. The caller's model policy applies; a model without `cloudBaseUrl` is 409.
   */
  async cloudModelAccess(principal: Principal, customModelId: string): Promise<Partial<Record<(typeof CLOUD_MODEL_CONFIG_FIELDS)[number], string>>> {
    const { settings } = await this.controls.inForce(principal.organizationId);
    const model = settings.customModels.find((candidate) => candidate.id === customModelId);
    if (!model) throw customModelNotFound(customModelId);
    const refusal = checkModel(settings, principal.userId, customModelId);
    if (refusal) throw new EnterpriseControlsError(EnterpriseControlsErrorCode.ModelNotAllowed, refusal.detail, { rule: refusal.rule, model: customModelId });
    if (!model.cloudModelConfig?.cloudBaseUrl) {
      throw new EnterpriseControlsError(
        EnterpriseControlsErrorCode.ModelNotCloud,
        `Custom model "${customModelId}" has no cloudModelConfig.cloudBaseUrl: agents reach it through the relay, /api/v0/agent/models/${customModelId}.`,
        { customModelId },
      );
    }
    const [revealed] = this.controls.reveal(principal.organizationId, { ...settings, customModels: [model] }).customModels;
    return { ...revealed.cloudModelConfig };
  }

  async mcpLaunch(principal: Principal, serverName: string): Promise<{ command: string; args: string[]; env: Record<string, string> }> {
    const { server } = await this.mcpServerFor(principal, serverName, 'stdio');
    return { command: server.command, args: server.args ?? [], env: server.env ?? {} };
  }

  /**
   * The named MCP server with its secrets revealed, once the caller's mcpPolicy allows it (else 404, 403, or 409 for the
   * other transport), and the organization's networkPolicy.allowedIps, which the relay keeps to.
   */
  private async mcpServerFor<T extends McpServer['transport']>(
    principal: Principal,
    serverName: string,
    transport: T,
  ): Promise<{ server: Extract<McpServer, { transport: T }>; allowedIps: AllowedIps | null }> {
    const { settings } = await this.controls.inForce(principal.organizationId);
    const sealed = (settings.mcpServers ?? []).find((candidate) => candidate.name === serverName);
    if (!sealed) {
      throw mcpServerNotFound(serverName);
    }
    const refusal = mcpPolicyRefusal(settings, serverName);
    if (refusal) throw new EnterpriseControlsError(EnterpriseControlsErrorCode.McpNotAllowed, refusal, { serverName });
    if (sealed.transport !== transport) {
      const way = sealed.transport === 'http' ? `/api/v0/agent/mcp/${serverName} (the relay)` : `/api/v0/agent/mcp/${serverName}/launch`;
      throw new EnterpriseControlsError(
        EnterpriseControlsErrorCode.McpTransportMismatch,
        `MCP server "${serverName}" is a ${sealed.transport} server, not ${transport}; agents use it through ${way}.`,
        { serverName, transport: sealed.transport },
      );
    }
    const [revealed] = this.controls.reveal(principal.organizationId, { ...settings, customModels: [], mcpServers: [sealed] }).mcpServers!;
    return { server: revealed as Extract<McpServer, { transport: T }>, allowedIps: AllowedIps.of(settings) };
  }

  /** Sends in one of the computer's relay slots, held until the answer is read (or its stream closed). */
  private async inRelaySlot<T extends object>(principal: Principal, send: () => Promise<T>): Promise<T> {
    const release = this.takeRelaySlot(principal);
    try {
      const answer = await send();
      if ('stream' in answer) (answer.stream as Readable).once('close', release);
      else release();
      return answer;
    } catch (error) {
      release();
      throw error;
    }
  }

  /** One of the computer's MODEL_RELAY_CONCURRENCY_PER_COMPUTER relayed calls, or 429. */
  private takeRelaySlot(principal: Principal): () => void {
    const caller = principal.credential.kind === 'computer' ? principal.credential.computerId : principal.userId;
    const limit = this.config.MODEL_RELAY_CONCURRENCY_PER_COMPUTER;
    if (this.relays.count(caller) >= limit) {
      logSecurityEvent('quota.exceeded', securityActorOf(principal), { quota: 'MODEL_RELAY_CONCURRENCY_PER_COMPUTER', limit });
      const error = new EnterpriseControlsError(
        EnterpriseControlsErrorCode.TooManyRelays,
        `Your computer already has ${limit} relayed model calls in progress on this server (MODEL_RELAY_CONCURRENCY_PER_COMPUTER); wait for one to end.`,
        { limit: 'MODEL_RELAY_CONCURRENCY_PER_COMPUTER', max: limit },
      );
      error.retryAfterSeconds = 5;
      throw error;
    }
    return this.relays.take(caller);
  }
}

/** What each way a relayed call can fail answers. */
const RELAY_FAILURES: Record<RelayFailureReason, { code: EnterpriseControlsErrorCode }> = {
  refused: { code: EnterpriseControlsErrorCode.ModelAddressRefused },
  unreachable: { code: EnterpriseControlsErrorCode.ModelUnreachable },
  redirected: { code: EnterpriseControlsErrorCode.ModelRedirected },
  invalid_answer: { code: EnterpriseControlsErrorCode.ModelAnswerInvalid },
  timed_out: { code: EnterpriseControlsErrorCode.ModelTimedOut },
};

/** The relay's endpoints, each speaking one API: `chat/completions` and `messages` under `/api/v0/agent/models/{customModelId}/`. */
export type RelayApi = 'chat/completions' | 'messages';
const RELAY_APIS: Record<CustomModelProvider, RelayApi> = { 'generic-chat-completion-api': 'chat/completions', anthropic: 'messages' };

/** The version of the Messages API the relay asks for when the caller names none. */
const ANTHROPIC_VERSION = '2023-06-01';

/** What each way a relayed MCP request can fail answers. */
const MCP_RELAY_FAILURES: Record<RelayFailureReason, EnterpriseControlsErrorCode> = {
  refused: EnterpriseControlsErrorCode.McpAddressRefused,
  unreachable: EnterpriseControlsErrorCode.McpUnreachable,
  redirected: EnterpriseControlsErrorCode.McpRedirected,
  invalid_answer: EnterpriseControlsErrorCode.McpAnswerInvalid,
  timed_out: EnterpriseControlsErrorCode.McpTimedOut,
};

/** `{baseUrl}/chat/completions`, a query string of baseUrl kept after the path. */
function chatCompletionsUrl(baseUrl: string): URL {
  return withPath(baseUrl, '/chat/completions');
}

/** `{baseUrl}/v1/messages` for a baseUrl without a path (`https://api.anthropic.com`), else `{baseUrl}/messages`; a query is kept. */
function messagesUrl(baseUrl: string): URL {
  return withPath(baseUrl, new URL(baseUrl).pathname.replace(/\/+$/, '') === '' ? '/v1/messages' : '/messages');
}

function withPath(baseUrl: string, suffix: string): URL {
  const url = new URL(baseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${suffix}`;
  url.hash = '';
  return url;
}

function chatCompletionsHeaders(model: CustomModel): Record<string, string> {
  return { ...model.extraHeaders, ...(model.apiKey ? { authorization: `Bearer ${model.apiKey}` } : {}) };
}

/**
 * The model's `extraHeaders`, its key as `x-api-key`, and `anthropic-version`: the caller's (with its
 * `anthropic-beta`) when it sends one, else the model's `extraHeaders` one, else 2023-06-01.
 */
function anthropicHeaders(model: CustomModel, caller: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION };
  for (const [name, value] of Object.entries(model.extraHeaders ?? {})) headers[name.toLowerCase()] = value;
  for (const name of ['anthropic-version', 'anthropic-beta']) {
    const value = caller[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  if (model.apiKey) headers['x-api-key'] = model.apiKey;
  return headers;
}

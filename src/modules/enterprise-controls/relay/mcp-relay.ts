import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { AppConfig } from '../../../config/app-config';
import type { OrganizationIps } from '../../../contract/address-policy';
import { isEventStream, RelayExchange, RelayFailure } from './relay-exchange';

/** The request headers of the Streamable HTTP transport the relay passes on, and no others of the caller's. */
export const MCP_REQUEST_HEADERS = ['mcp-session-id', 'mcp-protocol-version', 'accept', 'content-type', 'last-event-id'] as const;
/** The answer headers passed back (`www-authenticate` only as far as AgentRelays, which keeps OAuth to itself). */
const MCP_ANSWER_HEADERS = ['content-type', 'mcp-session-id', 'www-authenticate'] as const;

/** One relayed request of an agent's MCP client. */
export interface McpRelayRequest {
  method: 'POST' | 'DELETE';
  /** The caller's MCP_REQUEST_HEADERS that it sent. */
  headers: Record<string, string>;
  /** The JSON-RPC message or batch (POST). */
  body?: unknown;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
}

export type McpRelayAnswer =
  { status: number; headers: Record<string, string>; body: string } | { status: number; headers: Record<string, string>; stream: Readable };

/**
 * Sends an agent's MCP requests to an HTTP MCP server of the organization, with the server's headers
 * added, under the same address rules as the model relay (RelayExchange; the operator's exceptions in
 * MCP_RELAY_ALLOWED_HOSTS). Back come the status, the content type, the MCP session id and a JSON body
 * or an event stream of bounded size, with any of the server's header values quoted in it masked.
 */
@Injectable()
export class McpRelay {
  private readonly exchange: RelayExchange;

  constructor(config: AppConfig, adapterHost: HttpAdapterHost) {
    this.exchange = new RelayExchange(config, adapterHost, { hosts: config.mcpRelayAllowedHosts, variable: 'MCP_RELAY_ALLOWED_HOSTS' });
  }

  async send(
    url: URL,
    serverHeaders: Record<string, string>,
    secrets: string[],
    allowedIps: OrganizationIps | null,
    request: McpRelayRequest,
  ): Promise<McpRelayAnswer> {
    const answer = await this.exchange.send({
      method: request.method,
      url,
      headers: { ...serverHeaders, ...request.headers, 'user-agent': 'agent-platform-mcp-relay' },
      body: request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body)),
      secrets,
      signal: request.signal,
      addressField: 'url',
      allowedIps,
      answerHeaders,
      streams: (_, headers) => isEventStream(headers),
    });
    if ('stream' in answer) return answer;
    const { status, headers, text } = answer;
    // A notification's answer (202) and a DELETE's have no body.
    if (text.trim() === '') {
      delete headers['content-type'];
      return { status, headers, body: '' };
    }
    try {
      JSON.parse(text);
    } catch {
      throw new RelayFailure(
        'invalid_answer',
        `answered ${status} with ${headers['content-type'] ?? 'no content type'}, neither JSON nor an event stream; the relay passes on those only`,
        status,
      );
    }
    return { status, headers: { ...headers, 'content-type': 'application/json; charset=utf-8' }, body: text };
  }
}

function answerHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of MCP_ANSWER_HEADERS) {
    const value = headers[name];
    if (typeof value === 'string') picked[name] = value;
  }
  return picked;
}

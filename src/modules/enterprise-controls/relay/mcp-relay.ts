import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { IncomingMessage } from 'node:http';
import { pipeline, Readable } from 'node:stream';
import { AppConfig } from '../../../config/app-config';
import { VettedDestination } from '../../../platform/outbound/address-policy';
import { OutboundClient } from '../../../platform/outbound/outbound-client';
import { describeNetworkError, DestinationRefused } from '../../../platform/outbound/outbound-guard';
import { mask, MaskedLines, readAtMost, RelayFailure } from './model-relay';

/** The request headers of the Streamable HTTP transport the relay passes on, and no others of the caller's. */
export const MCP_REQUEST_HEADERS = ['mcp-session-id', 'mcp-protocol-version', 'accept', 'content-type', 'last-event-id'] as const;
/** The answer headers passed back. */
const MCP_ANSWER_HEADERS = ['content-type', 'mcp-session-id'] as const;

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
 * added, under the same address rules as the model relay (OutboundClient: public addresses only
 * unless the host is in MCP_RELAY_ALLOWED_HOSTS, never this server, the lookup pinned, no redirects
 * followed). Back come the status, the content type, the MCP session id and a JSON body or an event
 * stream of bounded size, with any of the server's header values quoted in it masked.
 */
@Injectable()
export class McpRelay {
  private readonly client: OutboundClient;

  constructor(
    private readonly config: AppConfig,
    adapterHost: HttpAdapterHost,
  ) {
    this.client = new OutboundClient(
      { config, adapterHost },
      { allowedHosts: config.mcpRelayAllowedHosts, allowedHostsVariable: 'MCP_RELAY_ALLOWED_HOSTS', maxSockets: 256 },
    );
  }

  async send(url: URL, serverHeaders: Record<string, string>, secrets: string[], request: McpRelayRequest): Promise<McpRelayAnswer> {
    const destination = await this.vet(url);
    const timeout = AbortSignal.timeout(this.config.MODEL_RELAY_TIMEOUT_MS);
    const signal = AbortSignal.any([request.signal, timeout]);
    const timedOut = () => new RelayFailure('timed_out', `did not answer within ${this.config.MODEL_RELAY_TIMEOUT_MS} ms (MODEL_RELAY_TIMEOUT_MS)`);
    let response: IncomingMessage;
    try {
      const headers = { ...serverHeaders, ...request.headers, 'user-agent': 'agent-platform-mcp-relay' };
      const body = request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body));
      response = await this.client.send(request.method, url, destination, { headers, body, signal });
    } catch (error) {
      if (timeout.aborted) throw timedOut();
      throw new RelayFailure('unreachable', `could not be reached: ${describeNetworkError(error as NodeJS.ErrnoException)}`);
    }
    const status = response.statusCode ?? 502;
    if (status >= 300 && status < 400) {
      response.destroy();
      throw new RelayFailure(
        'redirected',
        `answered ${status}, a redirect; the relay does not follow redirects, so url must be the address that answers`,
        status,
      );
    }
    const headers: Record<string, string> = {};
    for (const name of MCP_ANSWER_HEADERS) {
      const value = response.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const max = this.config.MODEL_RELAY_MAX_RESPONSE_BYTES;
    if (/^text\/event-stream\b/i.test(headers['content-type'] ?? '')) {
      return { status, headers, stream: pipeline(response, new MaskedLines(secrets, max), () => undefined) };
    }
    let text: string;
    try {
      text = mask(await readAtMost(response, max), secrets);
    } catch (error) {
      if (timeout.aborted) throw timedOut();
      if (error instanceof RelayFailure) throw error;
      throw new RelayFailure('unreachable', `stopped answering: ${describeNetworkError(error as NodeJS.ErrnoException)}`);
    }
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

  private async vet(url: URL): Promise<VettedDestination> {
    try {
      return await this.client.vet(url);
    } catch (error) {
      if (error instanceof DestinationRefused) throw new RelayFailure('refused', error.message);
      throw error;
    }
  }
}

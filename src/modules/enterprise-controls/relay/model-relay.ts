import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { AppConfig } from '../../../config/app-config';
import type { OrganizationIps } from '../../../contract/address-policy';
import { isEventStream, RelayExchange, RelayFailure } from './relay-exchange';

/** One relayed call, as the service prepares it. */
export interface RelayCall {
  /** The model's endpoint: chat completions, or Anthropic messages. */
  url: URL;
  /** The model's own headers (its key as Authorization or x-api-key, `extraHeaders`, `anthropic-version`); the relay adds only its fixed ones. */
  headers: Record<string, string>;
  payload: Record<string, unknown>;
  /** The model's secrets in plain text: masked wherever the answer quotes them. */
  secrets: string[];
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
  /** The organization's `networkPolicy.allowedIps`, which the model's address must also be inside (null: not set). */
  allowedIps: OrganizationIps | null;
}

export type RelayAnswer =
  { status: number; headers: Record<string, string>; json: string } | { status: number; headers: Record<string, string>; stream: Readable };

/** Answer headers passed back: what a client needs to read the answer and to pace itself. */
function isAnswerHeader(name: string): boolean {
  return ['content-type', 'retry-after', 'x-request-id', 'request-id', 'openai-processing-ms'].includes(name) || /^(x|anthropic)-ratelimit-[a-z-]+$/.test(name);
}

/**
 * Sends chat completions and Anthropic messages to custom models on the organization's behalf, under
 * the server's address policy (RelayExchange; the operator's exceptions in MODEL_RELAY_ALLOWED_HOSTS).
 * Only the request the service built goes out, and only a JSON body (or, for a streamed call, an
 * event stream) of bounded size, with a fixed set of headers, comes back.
 */
@Injectable()
export class ModelRelay {
  private readonly exchange: RelayExchange;

  constructor(config: AppConfig, adapterHost: HttpAdapterHost) {
    this.exchange = new RelayExchange(config, adapterHost, { hosts: config.modelRelayAllowedHosts, variable: 'MODEL_RELAY_ALLOWED_HOSTS' });
  }

  async send(call: RelayCall): Promise<RelayAnswer> {
    const streamed = call.payload.stream === true;
    const answer = await this.exchange.send({
      method: 'POST',
      url: call.url,
      headers: {
        ...call.headers,
        'content-type': 'application/json',
        accept: streamed ? 'text/event-stream, application/json' : 'application/json',
        'user-agent': 'agent-platform-relay',
      },
      body: Buffer.from(JSON.stringify(call.payload)),
      secrets: call.secrets,
      signal: call.signal,
      addressField: 'baseUrl',
      allowedIps: call.allowedIps,
      answerHeaders,
      streams: (status, headers) => streamed && status < 300 && isEventStream(headers),
    });
    if ('stream' in answer) return answer;
    try {
      JSON.parse(answer.text);
    } catch {
      throw new RelayFailure(
        'invalid_answer',
        `answered ${answer.status} with ${answer.headers['content-type'] ?? 'no content type'}, not JSON; the relay passes on JSON answers only`,
        answer.status,
      );
    }
    return { status: answer.status, headers: { ...answer.headers, 'content-type': 'application/json; charset=utf-8' }, json: answer.text };
  }
}

function answerHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && isAnswerHeader(name)) picked[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return picked;
}

import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { pipeline, Readable, Transform, TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { AppConfig } from '../../../config/app-config';
import { VettedDestination } from '../../../platform/outbound/address-policy';
import { OutboundClient } from '../../../platform/outbound/outbound-client';
import { describeNetworkError, DestinationRefused } from '../../../platform/outbound/outbound-guard';
import { maskSecret } from '../domain/secret-mask';

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
}

export type RelayAnswer =
  { status: number; headers: Record<string, string>; json: string } | { status: number; headers: Record<string, string>; stream: Readable };

export type RelayFailureReason = 'refused' | 'unreachable' | 'redirected' | 'invalid_answer' | 'timed_out';

export class RelayFailure extends Error {
  constructor(
    readonly reason: RelayFailureReason,
    message: string,
    readonly upstreamStatus?: number,
  ) {
    super(message);
  }
}

/** Answer headers passed back: what a client needs to read the answer and to pace itself. */
function isAnswerHeader(name: string): boolean {
  return ['content-type', 'retry-after', 'x-request-id', 'request-id', 'openai-processing-ms'].includes(name) || /^(x|anthropic)-ratelimit-[a-z-]+$/.test(name);
}

/**
 * Sends chat completions and Anthropic messages to custom models on the organization's behalf, under the server's address
 * policy: the model's host is resolved once and every address must be public (or the host named in
 * MODEL_RELAY_ALLOWED_HOSTS); the connection goes to those addresses and no other (the lookup is
 * pinned, so DNS cannot change its answer between the check and the connect); never to this server
 * itself; redirects are answered, not followed. Only the request the service built goes out, and only
 * a JSON body (or an event stream) of bounded size, with a fixed set of headers, comes back.
 */
@Injectable()
export class ModelRelay {
  // Connections are kept for the next call to the same host; each was made to a vetted address.
  private readonly client: OutboundClient;

  constructor(
    private readonly config: AppConfig,
    adapterHost: HttpAdapterHost,
  ) {
    this.client = new OutboundClient(
      { config, adapterHost },
      { allowedHosts: config.modelRelayAllowedHosts, allowedHostsVariable: 'MODEL_RELAY_ALLOWED_HOSTS', maxSockets: 256 },
    );
  }

  async send(call: RelayCall): Promise<RelayAnswer> {
    const destination = await this.vet(call.url);
    const timeout = AbortSignal.timeout(this.config.MODEL_RELAY_TIMEOUT_MS);
    const signal = AbortSignal.any([call.signal, timeout]);
    const timedOut = () => new RelayFailure('timed_out', `did not answer within ${this.config.MODEL_RELAY_TIMEOUT_MS} ms (MODEL_RELAY_TIMEOUT_MS)`);
    let response: IncomingMessage;
    try {
      response = await this.post(call, destination, signal);
    } catch (error) {
      if (timeout.aborted) throw timedOut();
      throw new RelayFailure('unreachable', `could not be reached: ${describeNetworkError(error as NodeJS.ErrnoException)}`);
    }
    const status = response.statusCode ?? 502;
    if (status >= 300 && status < 400) {
      response.destroy();
      throw new RelayFailure(
        'redirected',
        `answered ${status}, a redirect; the relay does not follow redirects, so baseUrl must be the address that answers`,
        status,
      );
    }
    const headers = answerHeaders(response.headers);
    const max = this.config.MODEL_RELAY_MAX_RESPONSE_BYTES;
    if (call.payload.stream === true && status < 300 && /^text\/event-stream\b/i.test(headers['content-type'] ?? '')) {
      // pipeline: an upstream that breaks off ends the caller's stream too.
      return { status, headers, stream: pipeline(response, new MaskedLines(call.secrets, max), () => undefined) };
    }
    let text: string;
    try {
      text = mask(await readAtMost(response, max), call.secrets);
    } catch (error) {
      if (timeout.aborted) throw timedOut();
      if (error instanceof RelayFailure) throw error;
      throw new RelayFailure('unreachable', `stopped answering: ${describeNetworkError(error as NodeJS.ErrnoException)}`);
    }
    try {
      JSON.parse(text);
    } catch {
      throw new RelayFailure(
        'invalid_answer',
        `answered ${status} with ${headers['content-type'] ?? 'no content type'}, not JSON; the relay passes on JSON answers only`,
        status,
      );
    }
    return { status, headers: { ...headers, 'content-type': 'application/json; charset=utf-8' }, json: text };
  }

  /** Where the call may go, or a RelayFailure('refused') that says which rule refused it. */
  private async vet(url: URL): Promise<VettedDestination> {
    try {
      return await this.client.vet(url);
    } catch (error) {
      if (error instanceof DestinationRefused) throw new RelayFailure('refused', error.message);
      throw error;
    }
  }

  private post(call: RelayCall, destination: VettedDestination, signal: AbortSignal): Promise<IncomingMessage> {
    const headers = {
      ...call.headers,
      'content-type': 'application/json',
      accept: call.payload.stream === true ? 'text/event-stream, application/json' : 'application/json',
      'user-agent': 'agent-platform-relay',
    };
    return this.client.post(call.url, destination, { headers, body: Buffer.from(JSON.stringify(call.payload)), signal });
  }
}

function answerHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && isAnswerHeader(name)) picked[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return picked;
}

export function mask(text: string, secrets: string[]): string {
  return secrets.reduce((masked, secret) => (secret.length >= 4 ? masked.split(secret).join(maskSecret(secret)) : masked), text);
}

export async function readAtMost(stream: Readable, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > max) {
      stream.destroy();
      throw new RelayFailure('invalid_answer', `answered more than ${max} bytes (MODEL_RELAY_MAX_RESPONSE_BYTES)`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * An event stream passed on line by line, each line with the model's secrets masked (a secret never
 * spans lines), ended with an error once it passes `max` bytes.
 */
export class MaskedLines extends Transform {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private size = 0;

  constructor(
    private readonly secrets: string[],
    private readonly max: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.max) return done(new RelayFailure('invalid_answer', `streamed more than ${this.max} bytes (MODEL_RELAY_MAX_RESPONSE_BYTES)`));
    const text = this.pending + this.decoder.write(chunk);
    const cut = text.lastIndexOf('\n') + 1;
    this.pending = text.slice(cut);
    if (cut > 0) this.push(mask(text.slice(0, cut), this.secrets));
    done();
  }

  override _flush(done: TransformCallback): void {
    const rest = this.pending + this.decoder.end();
    if (rest) this.push(mask(rest, this.secrets));
    done();
  }
}

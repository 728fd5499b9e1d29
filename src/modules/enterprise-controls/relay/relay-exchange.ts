import { HttpAdapterHost } from '@nestjs/core';
import { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { pipeline, Readable, Transform, TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { AppConfig } from '../../../config/app-config';
import type { OrganizationIps } from '../../../contract/address-policy';
import { OutboundClient } from '../../../platform/outbound/outbound-client';
import { describeNetworkError, DestinationRefused } from '../../../platform/outbound/outbound-guard';
import { maskSecret } from '../domain/secret-mask';

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

/** One request a relay sends on for an agent: where, what, and the secrets its answer must not quote. */
export interface RelayedRequest {
  method: 'POST' | 'DELETE';
  url: URL;
  headers: Record<string, string>;
  body?: Buffer;
  /** The secrets the request carries in plain text: masked wherever the answer quotes them. */
  secrets: string[];
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
  /** The setting that names the address, for the redirect's message (`baseUrl`, `url`). */
  addressField: string;
  /** The organization's `networkPolicy.allowedIps`, which the destination must also be inside (null: not set). */
  allowedIps: OrganizationIps | null;
  /** The answer's headers passed back. */
  answerHeaders(headers: IncomingHttpHeaders): Record<string, string>;
  /** Whether an answer with this status and these headers is passed on as an event stream. */
  streams(status: number, headers: Record<string, string>): boolean;
}

/** An answer as it came: a stream passed on (masked, bounded), or the whole body read (masked, bounded). */
export type RelayedAnswer =
  { status: number; headers: Record<string, string>; stream: Readable } | { status: number; headers: Record<string, string>; text: string };

/**
 * The exchange both relays (models, MCP servers) make on an agent's behalf, under the server's
 * address policy (OutboundClient: the host resolved once, public addresses only unless named in the
 * relay's own allowed-hosts setting, never this server, the connection pinned to the address checked),
 * never following a redirect, within MODEL_RELAY_TIMEOUT_MS and MODEL_RELAY_MAX_RESPONSE_BYTES, with
 * the request's secrets masked in whatever comes back.
 */
export class RelayExchange {
  // Connections are kept for the next request to the same host; each was made to a vetted address.
  private readonly client: OutboundClient;

  constructor(
    private readonly config: AppConfig,
    adapterHost: HttpAdapterHost,
    allowed: { hosts: string[]; variable: string },
  ) {
    this.client = new OutboundClient({ config, adapterHost }, { allowedHosts: allowed.hosts, allowedHostsVariable: allowed.variable, maxSockets: 256 });
  }

  async send(request: RelayedRequest): Promise<RelayedAnswer> {
    let destination;
    try {
      destination = await this.client.vet(request.url, request.allowedIps);
    } catch (error) {
      if (error instanceof DestinationRefused) throw new RelayFailure('refused', error.message);
      throw error;
    }
    const timeout = AbortSignal.timeout(this.config.MODEL_RELAY_TIMEOUT_MS);
    const signal = AbortSignal.any([request.signal, timeout]);
    const timedOut = () => new RelayFailure('timed_out', `did not answer within ${this.config.MODEL_RELAY_TIMEOUT_MS} ms (MODEL_RELAY_TIMEOUT_MS)`);
    let response: IncomingMessage;
    try {
      response = await this.client.send(request.method, request.url, destination, { headers: request.headers, body: request.body, signal });
    } catch (error) {
      if (timeout.aborted) throw timedOut();
      throw new RelayFailure('unreachable', `could not be reached: ${describeNetworkError(error as NodeJS.ErrnoException)}`);
    }
    const status = response.statusCode ?? 502;
    if (status >= 300 && status < 400) {
      response.destroy();
      throw new RelayFailure(
        'redirected',
        `answered ${status}, a redirect; the relay does not follow redirects, so ${request.addressField} must be the address that answers`,
        status,
      );
    }
    const headers = request.answerHeaders(response.headers);
    const max = this.config.MODEL_RELAY_MAX_RESPONSE_BYTES;
    if (request.streams(status, headers)) {
      // pipeline: an upstream that breaks off ends the caller's stream too.
      return { status, headers, stream: pipeline(response, new MaskedLines(request.secrets, max), () => undefined) };
    }
    try {
      return { status, headers, text: mask(await readAtMost(response, max), request.secrets) };
    } catch (error) {
      if (timeout.aborted) throw timedOut();
      if (error instanceof RelayFailure) throw error;
      throw new RelayFailure('unreachable', `stopped answering: ${describeNetworkError(error as NodeJS.ErrnoException)}`);
    }
  }
}

/** Whether the answer is an event stream, by its content type. */
export function isEventStream(headers: Record<string, string>): boolean {
  return /^text\/event-stream\b/i.test(headers['content-type'] ?? '');
}

export function mask(text: string, secrets: string[]): string {
  return secrets.reduce((masked, secret) => (secret.length >= 4 ? masked.split(secret).join(maskSecret(secret)) : masked), text);
}

async function readAtMost(stream: Readable, max: number): Promise<string> {
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
 * An event stream passed on line by line, each line with the secrets masked (a secret never spans
 * lines), ended with an error once it passes `max` bytes.
 */
class MaskedLines extends Transform {
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

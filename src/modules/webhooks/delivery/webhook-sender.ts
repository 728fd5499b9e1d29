import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { AppConfig } from '../../../config/app-config';
import { VettedDestination } from '../../../contract/address-policy';
import { OutboundClient } from '../../../platform/outbound/outbound-client';
import { describeNetworkError, DestinationRefused } from '../../../platform/outbound/outbound-guard';
import { sign } from '../domain/signing';
import type { IncomingMessage } from 'node:http';

export const USER_AGENT = 'agent-platform-webhooks/1';

/** How one attempt went: `ok` for a 2xx answer. */
export interface SendOutcome {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** The address rules refused the destination (no connection was made). */
  refused?: boolean;
}

/** Answers are read this far and dropped: a receiver's body says nothing the log keeps. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Sends one signed delivery through the server's outbound client (OutboundClient, WEBHOOK_ALLOWED_HOSTS):
 * plain http only to an allowed host, the host resolved once and vetted, the connection pinned to the
 * vetted addresses, never this server, no redirect followed, WEBHOOK_TIMEOUT_MS for the whole exchange.
 */
@Injectable()
export class WebhookSender {
  readonly client: OutboundClient;

  constructor(
    private readonly config: AppConfig,
    adapterHost: HttpAdapterHost,
  ) {
    this.client = new OutboundClient(
      { config, adapterHost },
      { allowedHosts: config.webhookAllowedHosts, allowedHostsVariable: 'WEBHOOK_ALLOWED_HOSTS', httpsUnlessAllowed: true, maxSockets: 64 },
    );
  }

  async send(input: { url: string; secret: string; messageId: string; body: string }): Promise<SendOutcome> {
    const started = Date.now();
    const elapsed = () => Date.now() - started;
    const url = new URL(input.url);
    let destination: VettedDestination;
    try {
      destination = await this.client.vet(url);
    } catch (error) {
      if (!(error instanceof DestinationRefused)) throw error;
      return { ok: false, statusCode: null, durationMs: elapsed(), error: `refused: ${error.message}`, refused: true };
    }
    const timeout = AbortSignal.timeout(this.config.WEBHOOK_TIMEOUT_MS);
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'webhook-id': input.messageId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': sign(input.secret, input.messageId, timestamp, input.body),
    };
    try {
      const response = await this.client.post(url, destination, { headers, body: input.body, signal: timeout });
      const statusCode = response.statusCode ?? 0;
      await drain(response);
      if (statusCode >= 200 && statusCode < 300) return { ok: true, statusCode, durationMs: elapsed(), error: null };
      const error = statusCode >= 300 && statusCode < 400 ? `answered ${statusCode}, a redirect; webhooks do not follow redirects` : `answered ${statusCode}`;
      return { ok: false, statusCode, durationMs: elapsed(), error };
    } catch (error) {
      const message = timeout.aborted
        ? `did not answer within ${this.config.WEBHOOK_TIMEOUT_MS} ms (WEBHOOK_TIMEOUT_MS)`
        : `could not be reached: ${describeNetworkError(error as NodeJS.ErrnoException)}`;
      return { ok: false, statusCode: null, durationMs: elapsed(), error: message };
    }
  }

  close(): void {
    this.client.close();
  }
}

/** Reads an answer to its end (at most MAX_ANSWER_BYTES, then drops the connection). */
async function drain(response: IncomingMessage): Promise<void> {
  let size = 0;
  for await (const chunk of response) {
    size += (chunk as Buffer).length;
    if (size > MAX_ANSWER_BYTES) {
      response.destroy();
      return;
    }
  }
}

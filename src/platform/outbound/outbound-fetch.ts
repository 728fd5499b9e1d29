import type { IncomingMessage } from 'node:http';
import type { OrganizationIps } from '../../contract/address-policy';
import type { OutboundClient } from './outbound-client';
import { DestinationRefused } from './outbound-guard';

/** What `fetch` a library is handed: the WHATWG signature. */
export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

export interface OutboundFetchOptions {
  /** The organization's `networkPolicy.allowedIps`, which every destination must also be inside (null: not set). */
  allowedIps: OrganizationIps | null;
  /** The whole exchange, body included. */
  timeoutMs: number;
  /** An answer past this many bytes is an error: these are small JSON documents. */
  maxBytes: number;
}

/**
 * `fetch` for a library that makes the server's calls itself (the MCP SDK's OAuth client), kept to the
 * OutboundClient's address rules: each URL is vetted and connected to at the vetted address, a redirect
 * comes back as the answer (never followed), and the exchange is bounded in time and size. Only GET and
 * POST are sent; a refusal rejects with DestinationRefused.
 */
export function outboundFetch(client: OutboundClient, options: OutboundFetchOptions): FetchLike {
  return async (input, init = {}) => {
    const url = new URL(typeof input === 'string' ? input : input.href);
    const method = (init.method ?? 'GET').toUpperCase();
    if (method !== 'GET' && method !== 'POST') throw new DestinationRefused(`${method} is not a method the server sends here`);
    const destination = await client.vet(url, options.allowedIps);
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const body = init.body === undefined || init.body === null ? undefined : String(init.body);
    const answer = await client.send(method, url, destination, { headers, body, signal });
    const status = answer.statusCode ?? 502;
    const bytes = await readAtMost(answer, options.maxBytes, url);
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    // A Response cannot carry a body with these statuses.
    const empty = status === 204 || status === 205 || status === 304;
    return new Response(empty ? null : new Uint8Array(bytes), { status, headers: responseHeaders });
  };
}

async function readAtMost(answer: IncomingMessage, max: number, url: URL): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of answer) {
    size += (chunk as Buffer).length;
    if (size > max) {
      answer.destroy();
      throw new Error(`${url.origin} answered more than ${max} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

import type { HttpAdapterHost } from '@nestjs/core';
import { Agent as HttpAgent, IncomingMessage, OutgoingHttpHeaders, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { OrganizationIps, pinnedLookup, VettedDestination } from '../../contract/address-policy';
import { DestinationRefused, listeningPort, OutboundGuard, OutboundGuardOptions } from './outbound-guard';

export interface OutboundClientOptions extends Pick<OutboundGuardOptions, 'resolve' | 'resolveTimeoutMs'> {
  /** The operator's exceptions for this kind of call, and the variable they come from (named in refusals). */
  allowedHosts: readonly string[];
  allowedHostsVariable: string;
  /** Plain `http` only to a host the operator allows by name (webhooks); otherwise http and https alike. */
  httpsUnlessAllowed?: boolean;
  /** Connections kept open per origin (each one made to a vetted address). */
  maxSockets: number;
}

/** The server a client belongs to: its BASE_URL and the port it listens on are never destinations. */
export interface OwnServer {
  config: { baseUrl: string; PORT: number };
  adapterHost: HttpAdapterHost;
}

/**
 * The one way the server calls a URL a user gave (webhooks, the model relay). `vet` applies the
 * address rules (OutboundGuard: http or https, never this server's BASE_URL or listening port, the
 * host resolved once and every address public unless the operator allows the host by name); `post`
 * then connects to the vetted addresses only (the lookup is pinned, so DNS cannot answer otherwise
 * between the check and the connect) and follows no redirect (node's http never does: a 3xx is the
 * caller's answer to judge). Vetting and sending are two steps so a caller's timeout can cover the
 * exchange alone.
 */
export class OutboundClient {
  readonly guard: OutboundGuard;
  private readonly httpAgent: HttpAgent;
  private readonly httpsAgent: HttpsAgent;

  constructor(
    server: OwnServer,
    private readonly options: OutboundClientOptions,
  ) {
    this.guard = new OutboundGuard({
      allowedHosts: options.allowedHosts,
      selfOrigin: server.config.baseUrl,
      listeningPort: () => listeningPort(server.adapterHost, server.config),
      resolve: options.resolve,
      resolveTimeoutMs: options.resolveTimeoutMs,
    });
    this.httpAgent = new HttpAgent({ keepAlive: true, maxSockets: options.maxSockets });
    this.httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: options.maxSockets });
  }

  /**
   * Why `url` is refused without a DNS lookup (scheme, this server, an IP literal or a name like
   * localhost that is not public, then plain http where it must be https), or null: for checking a URL
   * when it is saved.
   */
  refusalWithoutLookup(url: URL): string | null {
    return this.guard.refusalWithoutLookup(url) ?? this.httpRefusal(url);
  }

  /** Where a call to `url` may connect (inside `allowedIps` when given), or a DestinationRefused that says which rule refused what. */
  async vet(url: URL, allowedIps: OrganizationIps | null = null): Promise<VettedDestination> {
    // What the address rules say first (the security log wants "this server", not "must be https").
    const refusal = this.refusalWithoutLookup(url);
    if (refusal !== null) throw new DestinationRefused(refusal);
    return this.guard.vet(url, allowedIps);
  }

  /** POSTs `body` to `url` at the vetted destination; resolves with the answer's head, rejects with the network error. */
  post(
    url: URL,
    destination: VettedDestination,
    request: { headers: OutgoingHttpHeaders; body: string | Buffer; signal: AbortSignal },
  ): Promise<IncomingMessage> {
    return this.send('POST', url, destination, request);
  }

  /** Sends a request with `method` (and `body`, if any) to `url` at the vetted destination, as `post` does. */
  send(
    method: 'GET' | 'POST' | 'DELETE',
    url: URL,
    destination: VettedDestination,
    request: { headers: OutgoingHttpHeaders; body?: string | Buffer; signal: AbortSignal },
  ): Promise<IncomingMessage> {
    const https = url.protocol === 'https:';
    const length = request.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(request.body)) };
    return new Promise((resolve, reject) => {
      const outgoing = (https ? httpsRequest : httpRequest)(
        {
          method,
          host: destination.host,
          port: destination.port,
          path: `${url.pathname}${url.search}`,
          headers: { ...request.headers, host: url.host, ...length },
          agent: https ? this.httpsAgent : this.httpAgent,
          lookup: pinnedLookup(destination.addresses),
          ...(https && isIP(destination.host) === 0 ? { servername: destination.host } : {}),
          signal: request.signal,
        },
        resolve,
      );
      outgoing.on('error', reject);
      outgoing.end(request.body);
    });
  }

  /** Drops the kept connections. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private httpRefusal(url: URL): string | null {
    if (url.protocol !== 'http:' || !this.options.httpsUnlessAllowed || this.guard.allowsByName(url)) return null;
    return `${url.host} is not in ${this.options.allowedHostsVariable}, so the URL must be https`;
  }
}

import type { HttpAdapterHost } from '@nestjs/core';
import { AddressInfo, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';
import { AddressPolicy, AddressPolicyOptions, normalizeHost, OrganizationIps, VettedDestination } from '../../contract/address-policy';

/** A destination the address rules refuse; the message says which rule refused what. */
export class DestinationRefused extends Error {}

export interface OutboundGuardOptions extends Pick<AddressPolicyOptions, 'resolve' | 'resolveTimeoutMs'> {
  /** The operator's exceptions for this kind of call (MODEL_RELAY_ALLOWED_HOSTS, WEBHOOK_ALLOWED_HOSTS...). */
  allowedHosts: readonly string[];
  /** This server's BASE_URL: never a destination. */
  selfOrigin: string;
  /** The port this server listens on (undefined before it listens). */
  listeningPort: () => number | undefined;
}

/**
 * The rules of every HTTP call the server makes to a URL a user gave (model relay, webhooks): http or
 * https only; never this server (its BASE_URL, or its listening port on this machine); the host
 * resolved once under the AddressPolicy (public unicast addresses only, unless the operator allows the
 * host); callers then connect to the vetted addresses with `pinnedLookup` and follow no redirect.
 */
export class OutboundGuard {
  readonly policy: AddressPolicy;

  constructor(private readonly options: OutboundGuardOptions) {
    this.policy = new AddressPolicy({ allowedHosts: options.allowedHosts, resolve: options.resolve, resolveTimeoutMs: options.resolveTimeoutMs });
  }

  /** Whether the operator allows `url`'s host (and port) by name. */
  allowsByName(url: URL): boolean {
    return this.policy.allowsByName(url.hostname, portOf(url));
  }

  /**
   * Why `url` is refused, judged without a DNS lookup (a scheme, this server, an IP literal, a name
   * like localhost or a metadata service), or null: a name may still be refused when it is resolved.
   */
  refusalWithoutLookup(url: URL): string | null {
    const basic = this.basicRefusal(url);
    if (basic !== null) return basic;
    const port = portOf(url);
    const refusal = this.policy.refusalWithoutLookup(url.hostname, port);
    if (refusal !== null) return refusal;
    if (this.options.listeningPort() !== port) return null;
    const host = /^\[(.*)\]$/.exec(url.hostname)?.[1] ?? url.hostname;
    if (isIP(host) && isThisMachine(host)) return `${url.host} is this server (${host} port ${port})`;
    // localhost and *.localhost are loopback whatever DNS says (RFC 6761), even where the operator allows them.
    const name = normalizeHost(host);
    if (name === 'localhost' || name?.endsWith('.localhost')) return `${url.host} is this server (loopback port ${port})`;
    return null;
  }

  /**
   * Where a call to `url` may connect, or a DestinationRefused that says why not; with `allowedIps` (an organization's
   * networkPolicy), every address must also be inside it, whatever the operator allows.
   */
  async vet(url: URL, allowedIps: OrganizationIps | null = null): Promise<VettedDestination> {
    const basic = this.basicRefusal(url);
    if (basic !== null) throw new DestinationRefused(basic);
    const port = portOf(url);
    const policy = allowedIps ? this.policy.forOrganization(allowedIps) : this.policy;
    const destination = await policy.vet(url.hostname, port);
    if (!destination.allowed) throw new DestinationRefused(destination.reason);
    const self = this.options.listeningPort() === port ? destination.addresses.find(isThisMachine) : undefined;
    if (self !== undefined) throw new DestinationRefused(`${url.host} is this server (${self} port ${port})`);
    return destination;
  }

  private basicRefusal(url: URL): string | null {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${url.protocol} is not http or https`;
    if (url.origin === new URL(this.options.selfOrigin).origin) return `${url.host} is this server (BASE_URL)`;
    return null;
  }
}

function portOf(url: URL): number {
  return Number(url.port || (url.protocol === 'https:' ? 443 : 80));
}

/** A loopback or unspecified address, or one of this machine's interfaces. */
export function isThisMachine(address: string): boolean {
  const ip = ipaddr.parse(address);
  if (['loopback', 'unspecified'].includes(ip.range())) return true;
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() && isThisMachine((ip as ipaddr.IPv6).toIPv4Address().toString())) return true;
  const own = Object.values(networkInterfaces()).flatMap((entries) => (entries ?? []).map((entry) => ipaddr.parse(entry.address.split('%')[0]).toString()));
  return own.includes(ip.toString());
}

/** A network error in one line: its code and message. */
export function describeNetworkError(error: NodeJS.ErrnoException): string {
  return error.code ? `${error.code}${error.message ? ` (${error.message})` : ''}` : error.message;
}

/** The port this server listens on, or the configured PORT before it listens. */
export function listeningPort(adapterHost: HttpAdapterHost, config: { PORT: number }): number | undefined {
  const address = adapterHost.httpAdapter?.getHttpServer()?.address() as AddressInfo | string | null | undefined;
  return typeof address === 'object' && address !== null ? address.port : config.PORT;
}

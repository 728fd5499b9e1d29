import { lookup } from 'node:dns/promises';
import { isIP, LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
/** An organization's `networkPolicy.allowedIps`, as the address rules read it (the agent's AllowedIps is one). */
export interface OrganizationIps {
  allows(address: string): boolean;
  readonly entries: readonly string[];
}

/**
 * Addresses of cloud metadata services, refused by name of the rule even where the range they sit in
 * would be refused anyway: a security log that says "metadata" is worth the list. 168.63.129.16
 * (Azure's wire server) is in a public range and is refused only through this list.
 */
const METADATA_ADDRESSES = new Set(
  [
    '169.254.169.254', // AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack ...
    '169.254.169.253', // AWS's resolver
    '169.254.169.123', // AWS's time service
    '169.254.170.2', // AWS ECS task metadata
    '169.254.0.23', // Tencent Cloud
    '168.63.129.16', // Azure wire server
    '100.100.100.200', // Alibaba Cloud
    '192.0.0.192', // Oracle Cloud (legacy)
    'fd00:ec2::254', // AWS over IPv6
    'fd00:ec2::23', // AWS's resolver over IPv6
  ].map((address) => ipaddr.parse(address).toString()),
);

/** Names of cloud metadata services (some resolve only inside the cloud, where they reach the service). */
const METADATA_NAMES = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.tencentyun.com',
  'metadata.azure.internal',
]);

const IPV4_RANGES: Record<string, string> = {
  unspecified: 'an unspecified address (0.0.0.0/8)',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address (224.0.0.0/4)',
  linkLocal: 'a link-local address (169.254.0.0/16)',
  loopback: 'a loopback address (127.0.0.0/8)',
  carrierGradeNat: 'a carrier-grade NAT address (100.64.0.0/10)',
  private: 'a private address (RFC 1918)',
  reserved: 'a reserved or documentation address',
};

const IPV6_RANGES: Record<string, string> = {
  unspecified: 'the unspecified address (::)',
  loopback: 'the loopback address (::1)',
  linkLocal: 'a link-local address (fe80::/10)',
  multicast: 'a multicast address (ff00::/8)',
  uniqueLocal: 'a unique local address (fc00::/7)',
  deprecatedSiteLocal: 'a site-local address (fec0::/10)',
  discard: 'a discard-only address (100::/64)',
  rfc6145: 'an IPv4-translated address (::ffff:0:0:0/96)',
  benchmarking: 'a benchmarking address (2001:2::/48)',
  reserved: 'a reserved or documentation address',
};

const GLOBAL_UNICAST: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('2000::'), 3];
const NAT64_WELL_KNOWN: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('64:ff9b::'), 96];

/**
 * Why an IP address is not a public unicast address (a phrase: "a loopback address (127.0.0.0/8)"), or
 * null when it is one. IPv4 is judged by ipaddr.js's `range()` (only `unicast` passes) plus the metadata
 * list. IPv6 must also be global unicast (2000::/3), which leaves out the IPv4-compatible ::/96 and the
 * ranges ipaddr.js does not name. Forms that carry an IPv4 address are judged by it: IPv4-mapped
 * (::ffff:0:0/96) and NAT64 (64:ff9b::/96); 6to4 and Teredo, which tunnel through IPv4 to an address
 * of their own choosing, are refused whatever they embed.
 */
export function nonPublicReason(address: string): string | null {
  const ip = parseIp(address);
  if (ip === null) return 'not an IP address';
  if (ip.kind() === 'ipv4') return ipv4Reason(ip as ipaddr.IPv4);
  const v6 = ip as ipaddr.IPv6;
  if (METADATA_ADDRESSES.has(v6.toString())) return 'a cloud metadata address';
  const range = v6.range();
  if (range === 'ipv4Mapped') return embedded('an IPv4-mapped form', v6.toIPv4Address());
  if (range === 'rfc6052') {
    return v6.match(...NAT64_WELL_KNOWN) ? embedded('a NAT64 form', lastIpv4(v6)) : 'a local-use NAT64 address (64:ff9b:1::/48)';
  }
  if (range === '6to4') return `a 6to4 address (it tunnels to ${ipv4At(v6, 1)})`;
  if (range === 'teredo') return `a Teredo address (it tunnels through ${ipv4At(v6, 2)})`;
  if (range !== 'unicast') return IPV6_RANGES[range] ?? `a special-purpose address (${range})`;
  return v6.match(...GLOBAL_UNICAST) ? null : 'not a global unicast address (outside 2000::/3)';
}

/**
 * An IP address (no zone) as ipaddr.js objects. IPv6 text is first made canonical by the WHATWG URL
 * parser, as the system reads it: ipaddr.js's own parser takes `::127.0.0.1` (IPv4-compatible,
 * ::7f00:1) for `::ffff:127.0.0.1`, which is not the address a connection would go to.
 */
function parseIp(address: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const family = address.includes('%') ? 0 : isIP(address);
  if (family === 4) return ipaddr.IPv4.parse(address);
  if (family === 6) return ipaddr.IPv6.parse(new URL(`http://[${address}]/`).hostname.slice(1, -1));
  return null;
}

function ipv4Reason(ip: ipaddr.IPv4): string | null {
  if (METADATA_ADDRESSES.has(ip.toString())) return 'a cloud metadata address';
  const range = ip.range();
  return range === 'unicast' ? null : (IPV4_RANGES[range] ?? `a special-purpose address (${range})`);
}

function embedded(form: string, ip: ipaddr.IPv4): string | null {
  const reason = ipv4Reason(ip);
  return reason === null ? null : `${form} of ${ip.toString()}, ${reason}`;
}

/** The IPv4 address in the last 32 bits. */
function lastIpv4(ip: ipaddr.IPv6): ipaddr.IPv4 {
  return new ipaddr.IPv4(ip.toByteArray().slice(12, 16));
}

/** The IPv4 address in 16-bit parts `part` and `part + 1` (6to4: 1, Teredo's server: 2). */
function ipv4At(ip: ipaddr.IPv6, part: number): string {
  return new ipaddr.IPv4(ip.toByteArray().slice(part * 2, part * 2 + 4)).toString();
}

/** One entry of the operator's list: a host (name or IP) and, when given, the one port it is allowed on. */
export interface AllowedHost {
  host: string;
  port?: number;
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/**
 * A host as it is compared and looked up: lower case, no trailing dot, an IPv6 address without
 * brackets and in its canonical form. Null when it is neither a host name nor an IP address.
 */
export function normalizeHost(host: string): string | null {
  const bare = /^\[(.*)\]$/.exec(host)?.[1];
  if (bare !== undefined) return isIP(bare) === 6 ? (parseIp(bare)?.toString() ?? null) : null;
  if (isIP(host) === 6) return parseIp(host)?.toString() ?? null;
  const name = host.toLowerCase().replace(/\.$/, '');
  return HOST_NAME.test(name) ? name : null;
}

/**
 * Parses the operator's list: host names, IPv4 addresses or bracketed IPv6 addresses, each optionally
 * with `:port`. Throws on an entry that is none of these.
 */
export function parseAllowedHosts(entries: readonly string[]): AllowedHost[] {
  return entries.map((entry) => {
    const match = /^(\[[^\]]*\]|[^:]+)(?::(\d{1,5}))?$/.exec(entry.trim());
    const host = match ? normalizeHost(match[1]) : null;
    const port = match?.[2] === undefined ? undefined : Number(match[2]);
    if (host === null || (port !== undefined && !validPort(port))) {
      throw new Error(`Not a host, host:port or [IPv6]:port: ${JSON.stringify(entry)}`);
    }
    return port === undefined ? { host } : { host, port };
  });
}

/** Where to connect: the addresses checked, in the resolver's order. Connect to these, never to the name. */
export interface VettedDestination {
  allowed: true;
  /** The host as normalized (`normalizeHost`): what a Host header or TLS server name should carry. */
  host: string;
  port: number;
  /** The first address to try. */
  address: string;
  /** Every address the host resolved to, all checked (IPv4-mapped ones as plain IPv4). */
  addresses: string[];
  /** Whether the operator's list let it through (then the address classes were not checked). */
  allowedByName: boolean;
}

export interface RefusedDestination {
  allowed: false;
  /** One line that says which rule refused what, e.g. "localhost. resolves to 127.0.0.1, a loopback address (127.0.0.0/8)". */
  reason: string;
}

export interface AddressPolicyOptions {
  /** The operator's exceptions, as `OUTBOUND_ALLOWED_HOSTS` lists them. */
  allowedHosts?: readonly string[];
  /** The organization's `networkPolicy.allowedIps`: when given, every address must also be inside it. */
  allowedIps?: OrganizationIps | null;
  /** Every address of a name (default: `dns.lookup` with `all`, the resolver the operating system uses). */
  resolve?: (name: string) => Promise<string[]>;
  resolveTimeoutMs?: number;
}

/**
 * The one rule for every connection the server makes on a user's behalf: only public unicast addresses,
 * unless the operator allows the host by name; inside the organization's allowed IPs when it has some.
 * A name is resolved once, here, and every address it resolves to must pass: callers connect to the
 * addresses returned, so a second lookup cannot hand them another (DNS rebinding).
 */
export class AddressPolicy {
  private readonly allowedHosts: AllowedHost[];
  private readonly resolve: (name: string) => Promise<string[]>;
  private readonly resolveTimeoutMs: number;
  private readonly allowedIps: OrganizationIps | null;

  constructor(private readonly options: AddressPolicyOptions = {}) {
    this.allowedHosts = parseAllowedHosts(options.allowedHosts ?? []);
    this.allowedIps = options.allowedIps ?? null;
    this.resolve = options.resolve ?? (async (name) => (await lookup(name, { all: true })).map((entry) => entry.address));
    this.resolveTimeoutMs = options.resolveTimeoutMs ?? 5_000;
  }

  /** The same policy, narrowed to an organization's allowed IPs (null: not narrowed). */
  forOrganization(allowedIps: OrganizationIps | null): AddressPolicy {
    return new AddressPolicy({ ...this.options, allowedIps });
  }

  /** Whether the operator's list names `host` (on `port`, when the entry gives one). */
  allowsByName(host: string, port: number): boolean {
    const name = normalizeHost(host);
    return name !== null && this.allowedHosts.some((entry) => entry.host === name && (entry.port === undefined || entry.port === port));
  }

  /**
   * What `vet` refuses without a DNS lookup (an invalid host or port, a metadata or localhost name, an
   * IP address that is not public), or null: a name may still be refused once resolved.
   */
  refusalWithoutLookup(host: string, port: number): string | null {
    const name = normalizeHost(host);
    if (name === null) return `${JSON.stringify(host)} is not a valid host name or IP address`;
    if (!validPort(port)) return `${port} is not a valid port`;
    if (this.allowsByName(host, port)) return null;
    if (METADATA_NAMES.has(name)) return `${host} is a cloud metadata service`;
    if (name === 'localhost' || name.endsWith('.localhost')) return `${host} is a loopback name (localhost)`;
    if (!isIP(name)) return null;
    const reason = nonPublicReason(name);
    return reason === null ? null : `${host} is ${reason}`;
  }

  /** Whether `host` (a name or IP, IPv6 with or without brackets) may be reached on `port`, and at which addresses. */
  async vet(host: string, port: number): Promise<VettedDestination | RefusedDestination> {
    const name = normalizeHost(host);
    if (name === null) return refused(`${JSON.stringify(host)} is not a valid host name or IP address`);
    if (!validPort(port)) return refused(`${port} is not a valid port`);
    const allowedByName = this.allowsByName(host, port);
    if (!allowedByName) {
      if (METADATA_NAMES.has(name)) return refused(`${host} is a cloud metadata service`);
      if (name === 'localhost' || name.endsWith('.localhost')) return refused(`${host} is a loopback name (localhost)`);
    }

    let addresses: string[];
    if (isIP(name)) addresses = [name];
    else {
      try {
        addresses = await withTimeout(this.resolve(name), this.resolveTimeoutMs);
      } catch (error) {
        return refused(`${host} does not resolve${(error as Error).message === 'timed out' ? ` within ${this.resolveTimeoutMs} ms` : ''}`);
      }
      if (addresses.length === 0) return refused(`${host} does not resolve`);
    }

    // "10.0.0.1 is a private address ...", "db.example resolves to 10.0.0.1, a private address ..."
    const subject = (address: string) => (address === name ? `${host} is` : `${host} resolves to ${address},`);
    if (!allowedByName) {
      for (const address of addresses) {
        const reason = nonPublicReason(address);
        if (reason !== null) return refused(`${subject(address)} ${reason}`);
      }
    }
    if (this.allowedIps) {
      const outside = addresses.find((address) => !this.allowedIps!.allows(address));
      if (outside !== undefined) {
        return refused(`${subject(outside)} outside the organization's allowed IPs (networkPolicy.allowedIps: ${this.allowedIps.entries.join(', ')})`);
      }
    }
    const connectable = [...new Set(addresses.map(unmapped))];
    return { allowed: true, host: name, port, address: connectable[0], addresses: connectable, allowedByName };
  }
}

function refused(reason: string): RefusedDestination {
  return { allowed: false, reason };
}

function validPort(port: number): boolean {
  return Number.isInteger(port) && port >= 1 && port <= 65535;
}

/** `::ffff:1.2.3.4` is connected to as 1.2.3.4, which works where IPv6 is off too. */
function unmapped(address: string): string {
  const ip = parseIp(address);
  return ip?.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address().toString() : address;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([promise, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

/** A lookup that answers the addresses already vetted, whatever DNS would say now. */
export function pinnedLookup(addresses: string[]): LookupFunction {
  return (_hostname, options, callback) => {
    const family = typeof options.family === 'number' ? options.family : 0;
    const entries = addresses.map((address) => ({ address, family: isIP(address) })).filter((entry) => family === 0 || entry.family === family);
    if (entries.length === 0) {
      callback(Object.assign(new Error('no vetted address of that family'), { code: 'ENOTFOUND' }), '', 0);
    } else if (options.all) {
      (callback as unknown as (error: null, addresses: Array<{ address: string; family: number }>) => void)(null, entries);
    } else {
      callback(null, entries[0].address, entries[0].family);
    }
  };
}

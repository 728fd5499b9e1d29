import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/**
 * The organization's `networkPolicy.allowedIps`: when not empty, the only addresses (IPs or CIDR blocks)
 * an agent may connect to. The agent's own connection to the platform is not subject to it (without it
 * there is no agent); everything the model makes it reach is.
 */
export class AllowedIps {
  private readonly ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;

  constructor(readonly entries: readonly string[]) {
    this.ranges = entries.map(parseRange);
  }

  static of(policy: { networkPolicy?: unknown }): AllowedIps | null {
    const entries = (policy.networkPolicy as { allowedIps?: unknown } | undefined)?.allowedIps;
    return Array.isArray(entries) && entries.length > 0 ? new AllowedIps(entries.filter((e): e is string => typeof e === 'string')) : null;
  }

  allows(address: string): boolean {
    if (!ipaddr.isValid(address)) return false;
    const ip = unmapped(ipaddr.parse(address));
    return this.ranges.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range, bits));
  }

  /**
   * Every address outside the list, as CIDR blocks of both families: the sandbox's
   * `deniedResolvedAddresses`, so that a permitted name resolving elsewhere is refused too.
   */
  complement(): string[] {
    // IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are judged as the IPv4 addresses they are: the IPv6 part leaves them out.
    const mapped: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('::ffff:0:0'), 96];
    return (['ipv4', 'ipv6'] as const).flatMap((kind) => {
      const width = kind === 'ipv4' ? 32 : 128;
      const blocks = [...this.ranges, mapped]
        .filter(([range]) => range.kind() === kind)
        .map(([range, bits]): [bigint, bigint] => {
          const start = toBigInt(range) & ~((1n << BigInt(width - bits)) - 1n);
          return [start, start + (1n << BigInt(width - bits)) - 1n];
        })
        .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      const gaps: string[] = [];
      let next = 0n;
      for (const [start, end] of blocks) {
        if (start > next) gaps.push(...cidrsBetween(next, start - 1n, width));
        if (end + 1n > next) next = end + 1n;
      }
      const last = (1n << BigInt(width)) - 1n;
      if (next <= last) gaps.push(...cidrsBetween(next, last, width));
      return gaps;
    });
  }

  /** Why `host` may not be reached (a sentence naming the rule), or null; names are resolved first. */
  async refusalFor(host: string): Promise<string | null> {
    const bare = host.replace(/^\[(.*)\]$/, '$1');
    let addresses: string[];
    if (ipaddr.isValid(bare)) addresses = [bare];
    else {
      try {
        addresses = (await withTimeout(lookup(bare, { all: true, verbatim: true }), 3_000)).map((a) => a.address);
      } catch {
        return null; // a name that does not resolve cannot be reached either
      }
    }
    const outside = addresses.find((address) => !this.allows(address));
    if (outside === undefined) return null;
    const where = outside === bare ? bare : `${bare} (${outside})`;
    return `networkPolicy.allowedIps: ${where} is not among the addresses agents may connect to (${this.entries.join(', ')})`;
  }
}

/**
 * The hosts a shell command names: those of URLs (`https://host/...`), of `user@host:path` (scp, git
 * over ssh), and words that are IP addresses. A check made before the command runs, so it cannot see
 * what the command computes; the sandbox's proxies are what enforce the list on every connection.
 */
export function hostsNamedIn(command: string): string[] {
  const hosts = new Set<string>();
  for (const match of command.matchAll(/\b[a-z][a-z0-9+.-]*:\/\/(?:[^\s/@'"]*@)?(\[[0-9a-fA-F:.]+\]|[^\s/:'"?#]+)/gi)) hosts.add(match[1].toLowerCase());
  for (const match of command.matchAll(/(?:^|[\s'"])[\w.-]+@([a-z0-9][a-z0-9.-]*):/gi)) hosts.add(match[1].toLowerCase());
  for (const match of command.matchAll(/\b(?:ssh|sftp|mosh)\s+(?:-\S+\s+)*[\w.-]+@([a-z0-9][a-z0-9.-]*)/gi)) hosts.add(match[1].toLowerCase());
  for (const word of command.split(/[\s'"=;|&()<>,]+/)) {
    const bracketed = /^\[([0-9a-fA-F:.]+)\](?::\d+)?$/.exec(word);
    if (bracketed && ipaddr.IPv6.isValid(bracketed[1])) hosts.add(bracketed[1]);
    else if (word.includes('::') || (word.match(/:/g)?.length ?? 0) > 1) {
      if (ipaddr.IPv6.isValid(word)) hosts.add(word);
    } else if (ipaddr.IPv4.isValidFourPartDecimal(word.replace(/:\d+$/, ''))) hosts.add(word.replace(/:\d+$/, ''));
  }
  return [...hosts];
}

function parseRange(entry: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  if (entry.includes('/')) {
    const [range, bits] = ipaddr.parseCIDR(entry);
    // ::ffff:10.0.0.0/104 is 10.0.0.0/8; a block reaching beyond the mapped range stays IPv6.
    const mapped = range.kind() === 'ipv6' && (range as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96;
    return mapped ? [unmapped(range), bits - 96] : [range, bits];
  }
  const ip = unmapped(ipaddr.parse(entry));
  return [ip, ip.kind() === 'ipv4' ? 32 : 128];
}

/** `::ffff:10.0.0.1` is 10.0.0.1. */
function unmapped(ip: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
}

function toBigInt(ip: ipaddr.IPv4 | ipaddr.IPv6): bigint {
  return ip.toByteArray().reduce((value, byte) => (value << 8n) | BigInt(byte), 0n);
}

function fromBigInt(value: bigint, width: number): string {
  const bytes: number[] = [];
  for (let shift = width - 8; shift >= 0; shift -= 8) bytes.push(Number((value >> BigInt(shift)) & 0xffn));
  return ipaddr.fromByteArray(bytes).toString();
}

/** The fewest CIDR blocks that cover exactly [start, end]. */
function cidrsBetween(start: bigint, end: bigint, width: number): string[] {
  const blocks: string[] = [];
  while (start <= end) {
    let size = 0;
    while (size < width && (start & ((1n << BigInt(size + 1)) - 1n)) === 0n && start + (1n << BigInt(size + 1)) - 1n <= end) size++;
    blocks.push(`${fromBigInt(start, width)}/${width - size}`);
    start += 1n << BigInt(size);
  }
  return blocks;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([promise, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

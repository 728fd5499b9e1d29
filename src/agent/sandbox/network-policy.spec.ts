import ipaddr from 'ipaddr.js';
import { AllowedIps, hostsNamedIn } from './network-policy';

/** Deterministic 32-bit pseudo-random numbers (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

const bytesOf = (value: bigint, width: number): number[] => Array.from({ length: width / 8 }, (_, i) => Number((value >> BigInt(width - 8 * (i + 1))) & 0xffn));
const fromValue = (value: bigint, width: number): string => ipaddr.fromByteArray(bytesOf(value, width)).toString();
const valueOf = (address: string): bigint =>
  ipaddr
    .parse(address)
    .toByteArray()
    .reduce((value, byte) => (value << 8n) | BigInt(byte), 0n);
const widthOf = (address: string): number => (ipaddr.parse(address).kind() === 'ipv4' ? 32 : 128);

/** An address or CIDR block, parsed by ipaddr.js alone. */
const blockOf = (entry: string): [ipaddr.IPv4 | ipaddr.IPv6, number] => (entry.includes('/') ? ipaddr.parseCIDR(entry) : [ipaddr.parse(entry), widthOf(entry)]);
/** Membership by ipaddr.js alone: the block is of the same family as the address and holds it. */
const within = (ip: ipaddr.IPv4 | ipaddr.IPv6, [range, bits]: [ipaddr.IPv4 | ipaddr.IPv6, number]): boolean =>
  ip.kind() === range.kind() && ip.match(range, bits);

/** The first and last address of an entry, by ipaddr.js. */
function edges(entry: string): [string, string] {
  const block = entry.includes('/') ? entry : `${entry}/${widthOf(entry)}`;
  const v4 = ipaddr.parseCIDR(block)[0].kind() === 'ipv4';
  const first = v4 ? ipaddr.IPv4.networkAddressFromCIDR(block) : ipaddr.IPv6.networkAddressFromCIDR(block);
  const last = v4 ? ipaddr.IPv4.broadcastAddressFromCIDR(block) : ipaddr.IPv6.broadcastAddressFromCIDR(block);
  return [first.toString(), last.toString()];
}

/** Addresses to try against `entries`: pseudo-random ones of both families and every edge of every entry, ±1. */
function samples(entries: string[], seed: number): string[] {
  const next = random(seed);
  const out = new Set<string>(['0.0.0.0', '255.255.255.255', '::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff']);
  for (let i = 0; i < 300; i++) out.add(fromValue(BigInt(next()), 32));
  for (let i = 0; i < 300; i++) {
    const value = [next(), next(), next(), next()].reduce((v, word) => (v << 32n) | BigInt(word), 0n);
    // IPv4-mapped addresses are IPv4 ones (tested apart); a random 128-bit value is one only by chance.
    if (!(value >> 32n === 0xffffn)) out.add(fromValue(value, 128));
  }
  for (const entry of entries) {
    for (const edge of edges(entry)) {
      const width = widthOf(edge);
      const value = valueOf(edge);
      for (const neighbour of [value - 1n, value, value + 1n]) if (neighbour >= 0n && neighbour < 1n << BigInt(width)) out.add(fromValue(neighbour, width));
    }
  }
  return [...out];
}

describe('AllowedIps.allows', () => {
  const list = new AllowedIps(['10.0.0.0/8', '192.168.1.7', '2001:db8::/32', '::1', 'fd00:ab::/120']);

  it.each([
    ['10.0.0.0', true],
    ['10.255.255.255', true],
    ['10.123.4.5', true],
    ['9.255.255.255', false],
    ['11.0.0.0', false],
    ['192.168.1.7', true],
    ['192.168.1.6', false],
    ['192.168.1.8', false],
    ['2001:db8::', true],
    ['2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', true],
    ['2001:0DB8:0:0:0:0:0:42', true],
    ['2001:db9::', false],
    ['2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['::1', true],
    ['::2', false],
    ['::', false],
    ['fd00:ab::ff', true],
    ['fd00:ab::100', false],
  ])('%s -> %s', (address, expected) => {
    expect(list.allows(address)).toBe(expected);
  });

  it('takes an IPv4-mapped IPv6 address for the IPv4 address it carries', () => {
    expect(list.allows('::ffff:10.0.0.1')).toBe(true);
    expect(list.allows('::ffff:a00:1')).toBe(true);
    expect(list.allows('::ffff:192.168.1.7')).toBe(true);
    expect(list.allows('::ffff:11.0.0.1')).toBe(false);
    expect(list.allows('::ffff:192.168.1.8')).toBe(false);
  });

  it('reads IPv4-mapped entries as the IPv4 addresses and blocks they carry', () => {
    const mapped = new AllowedIps(['::ffff:10.0.0.0/104', '::ffff:192.168.1.7']);
    expect(mapped.allows('10.200.0.1')).toBe(true);
    expect(mapped.allows('::ffff:10.200.0.1')).toBe(true);
    expect(mapped.allows('11.0.0.0')).toBe(false);
    expect(mapped.allows('192.168.1.7')).toBe(true);
    expect(mapped.allows('192.168.1.6')).toBe(false);
    expect(mapped.complement()).toEqual(new AllowedIps(['10.0.0.0/8', '192.168.1.7']).complement());
  });

  it('does not mix the families: an IPv4 block says nothing of IPv6 addresses and the reverse', () => {
    expect(new AllowedIps(['0.0.0.0/0']).allows('2001:db8::1')).toBe(false);
    expect(new AllowedIps(['::/0']).allows('10.0.0.1')).toBe(false);
    expect(new AllowedIps(['::/0']).allows('2001:db8::1')).toBe(true);
    // 10.0.0.1 in the old IPv4-compatible spelling is not IPv4-mapped: it is an IPv6 address.
    expect(new AllowedIps(['10.0.0.0/8']).allows('::a00:1')).toBe(false);
  });

  it.each(['', 'garbage', 'example.com', '10.0.0.0/8', '[::1]', '10.0.0.1:80', '1.2.3.4.5', '256.0.0.1', '2001:db8::g', ' 10.0.0.1'])(
    'refuses what is not an address: %j',
    (address) => {
      expect(list.allows(address)).toBe(false);
    },
  );
});

/** The IPv6 part of a complement when the list has no IPv6 entry: all of IPv6 but the IPv4-mapped block, judged as IPv4. */
const V6_UNMAPPED = new AllowedIps(['0.0.0.0/0']).complement();
const sizeOf = (block: string) => 1n << BigInt(widthOf(block.split('/')[0]) - Number(block.split('/')[1]));

describe('AllowedIps.complement', () => {
  it("leaves IPv4-mapped IPv6 addresses to the IPv4 part (Node's BlockList, which the runtime uses, checks IPv4 against them)", () => {
    expect(V6_UNMAPPED.every((block) => ipaddr.parseCIDR(block)[0].kind() === 'ipv6')).toBe(true);
    expect(V6_UNMAPPED.reduce((sum, block) => sum + sizeOf(block), 0n)).toBe((1n << 128n) - (1n << 32n));
    const holds = (address: string) => V6_UNMAPPED.some((block) => within(ipaddr.parse(address), ipaddr.parseCIDR(block)));
    expect(['::', '::1', '::fffe:ffff:ffff', '::1:0:0:0', '2001:db8::1', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'].filter(holds)).toHaveLength(6);
    expect(['::ffff:0.0.0.0', '::ffff:10.1.2.3', '::ffff:255.255.255.255'].filter(holds)).toEqual([]);
  });

  it('for 10.0.0.0/8: the IPv4 blocks around it, and all of IPv6 (but the mapped block)', () => {
    expect(new AllowedIps(['10.0.0.0/8']).complement()).toEqual([
      '0.0.0.0/5',
      '8.0.0.0/7',
      '11.0.0.0/8',
      '12.0.0.0/6',
      '16.0.0.0/4',
      '32.0.0.0/3',
      '64.0.0.0/2',
      '128.0.0.0/1',
      ...V6_UNMAPPED,
    ]);
  });

  it('for a single address: a block of each size up to it and after it', () => {
    const blocks = new AllowedIps(['192.168.1.1']).complement();
    expect(blocks).toHaveLength(32 + V6_UNMAPPED.length);
    expect(blocks).toContain('192.168.1.0/32');
    expect(blocks).toContain('192.168.1.2/31');
    expect(blocks).toContain('0.0.0.0/1');
    expect(blocks).not.toContain('192.168.1.1/32');
    const aroundLoopback = new AllowedIps(['::1']).complement();
    expect(aroundLoopback[0]).toBe('0.0.0.0/0');
    expect(aroundLoopback.slice(0, 3)).toEqual(['0.0.0.0/0', '::/128', `${fromValue(2n, 128)}/127`]);
    expect(aroundLoopback.slice(1).reduce((sum, block) => sum + sizeOf(block), 0n)).toBe((1n << 128n) - (1n << 32n) - 1n);
  });

  it('with 0.0.0.0/0 has no IPv4 block, with ::/0 no IPv6 block', () => {
    expect(new AllowedIps(['0.0.0.0/0', '10.0.0.0/8']).complement()).toEqual(V6_UNMAPPED);
    expect(new AllowedIps(['::/0']).complement()).toEqual(['0.0.0.0/0']);
    expect(new AllowedIps(['0.0.0.0/0', '::/0']).complement()).toEqual([]);
  });

  it('covers the edges of the address space', () => {
    const single = (block: string) => Number(block.split('/')[1]) === widthOf(block.split('/')[0]);
    expect(new AllowedIps(['0.0.0.0', '255.255.255.255', '::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff']).complement().filter(single)).toEqual([
      '0.0.0.1/32',
      '255.255.255.254/32',
      '::1/128',
      'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/128',
    ]);
    expect(new AllowedIps(['0.0.0.0/1']).complement()).toEqual(['128.0.0.0/1', ...V6_UNMAPPED]);
    expect(new AllowedIps(['128.0.0.0/1']).complement()).toEqual(['0.0.0.0/1', ...V6_UNMAPPED]);
  });

  it('merges overlapping, nested and adjacent entries, whatever their order', () => {
    const v4 = (entries: string[]) => new AllowedIps(entries).complement().filter((block) => !block.includes(':'));
    expect(v4(['10.1.0.0/16', '10.0.0.0/8', '10.1.2.3'])).toEqual(v4(['10.0.0.0/8']));
    expect(v4(['10.0.0.0/9', '10.128.0.0/9'])).toEqual(v4(['10.0.0.0/8']));
    expect(v4(['10.128.0.0/9', '10.64.0.0/10', '10.0.0.0/10'])).toEqual(v4(['10.0.0.0/8']));
    expect(v4(['10.0.0.0/8', '10.0.0.0/8'])).toEqual(v4(['10.0.0.0/8']));
    // An entry with host bits set stands for its whole block, as ipaddr.js and the runtime read it.
    expect(v4(['10.9.8.7/8'])).toEqual(v4(['10.0.0.0/8']));
  });

  it('adds up to exactly what the list leaves out', () => {
    const size = (block: string) => 1n << BigInt(widthOf(block.split('/')[0]) - Number(block.split('/')[1]));
    const total = (entries: string[], family: string) =>
      new AllowedIps(entries)
        .complement()
        .filter((block) => ipaddr.parseCIDR(block)[0].kind() === family)
        .reduce((sum, block) => sum + size(block), 0n);
    expect(total(['10.0.0.0/8', '10.1.0.0/16', '10.1.2.3'], 'ipv4')).toBe((1n << 32n) - (1n << 24n));
    expect(total(['192.168.0.0/16', '192.168.128.0/17', '192.167.255.255', '172.16.0.0/12'], 'ipv4')).toBe((1n << 32n) - (1n << 16n) - 1n - (1n << 20n));
    expect(total(['2001:db8::/32', '2001:db8:1::/48', '::1', 'fe80::/10'], 'ipv6')).toBe((1n << 128n) - (1n << 96n) - 1n - (1n << 118n) - (1n << 32n));
  });

  describe.each([
    ['a block', ['10.0.0.0/8']],
    ['nested entries', ['10.0.0.0/8', '10.1.0.0/16', '10.1.2.3']],
    ['overlapping and adjacent entries', ['192.168.0.0/16', '192.168.128.0/17', '192.167.255.255', '172.16.0.0/12', '172.31.255.0/24', '172.32.0.0/24']],
    ['single addresses at the edges', ['0.0.0.0', '1.2.3.4', '1.2.3.5', '255.255.255.255']],
    ['IPv6 entries', ['2001:db8::/32', '2001:db8:1::/48', '::1', 'fe80::/10', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff']],
    ['both families', ['10.0.0.0/8', '2001:db8::/32', '100.64.0.0/10', 'fc00::/7', '8.8.8.8', '2606:4700:4700::1111']],
    ['entries with host bits set', ['10.9.8.7/8', '2001:db8::5/32']],
  ])('with %s', (_name, entries) => {
    const list = new AllowedIps(entries);
    const complement = list.complement();

    it('puts every address in exactly one of the list and the complement', () => {
      const listBlocks = entries.map(blockOf);
      const complementBlocks = complement.map(blockOf);
      const wrong: Array<{ address: string; listed: boolean; allowed: boolean; inComplement: string[] }> = [];
      const addresses = samples(entries, entries.length * 7919);
      for (const address of addresses) {
        const ip = ipaddr.parse(address);
        const listed = listBlocks.some((block) => within(ip, block));
        const inComplement = complement.filter((_, i) => within(ip, complementBlocks[i]));
        const allowed = list.allows(address);
        if (allowed !== listed || inComplement.length !== (listed ? 0 : 1)) wrong.push({ address, listed, allowed, inComplement });
      }
      expect(addresses.length).toBeGreaterThan(600);
      expect(wrong).toEqual([]);
    });

    it('gives aligned blocks (each is its own network address), none of which could be merged with the next', () => {
      for (const block of complement) {
        const [range, bits] = ipaddr.parseCIDR(block);
        const network = range.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(block) : ipaddr.IPv6.networkAddressFromCIDR(block);
        expect({ block, network: network.toString() }).toEqual({ block, network: range.toString() });
        expect(bits).toBeGreaterThanOrEqual(0);
      }
      for (let i = 1; i < complement.length; i++) {
        const [a, aBits] = ipaddr.parseCIDR(complement[i - 1]);
        const [b, bBits] = ipaddr.parseCIDR(complement[i]);
        if (a.kind() !== b.kind() || aBits !== bBits || aBits === 0) continue;
        const width = a.kind() === 'ipv4' ? 32 : 128;
        const aligned = (valueOf(a.toString()) & ((1n << BigInt(width - aBits + 1)) - 1n)) === 0n;
        const adjacent = valueOf(b.toString()) === valueOf(a.toString()) + (1n << BigInt(width - aBits));
        expect({ pair: [complement[i - 1], complement[i]], mergeable: aligned && adjacent }).toEqual({
          pair: [complement[i - 1], complement[i]],
          mergeable: false,
        });
      }
    });
  });
});

describe('AllowedIps.of', () => {
  it('is null when the organization has no list, or an empty one', () => {
    expect(AllowedIps.of({})).toBeNull();
    expect(AllowedIps.of({ networkPolicy: undefined })).toBeNull();
    expect(AllowedIps.of({ networkPolicy: { allowedIps: [] } })).toBeNull();
    expect(AllowedIps.of({ networkPolicy: { allowedIps: 'not a list' } })).toBeNull();
  });

  it('holds the entries of a list that is not empty', () => {
    const list = AllowedIps.of({ networkPolicy: { allowedIps: ['10.0.0.0/8', '::1'] } });
    expect(list?.entries).toEqual(['10.0.0.0/8', '::1']);
    expect(list?.allows('10.1.1.1')).toBe(true);
    expect(list?.allows('11.1.1.1')).toBe(false);
  });
});

describe('hostsNamedIn', () => {
  it.each([
    ['curl https://example.com/path', ['example.com']],
    ['curl -sS https://user:secret@Api.Example.COM:8443/v1?x=1#top', ['api.example.com']],
    ['wget http://token@files.example.org/a.tgz', ['files.example.org']],
    ['curl http://example.com?q=1', ['example.com']],
    ['curl "https://quoted.example/x" && curl \'http://single.example\'', ['quoted.example', 'single.example']],
    ['curl http://[::1]:8080/health', ['[::1]']],
    ['curl -g "http://[2001:db8::7]/"', ['[2001:db8::7]']],
    ['curl http://10.9.9.9/', ['10.9.9.9']],
    ['curl http://10.9.9.9:8080/x', ['10.9.9.9']],
    ['git clone git@github.com:org/repo.git', ['github.com']],
    ['git remote add origin ssh://git@gitlab.example.com:2222/org/repo.git', ['gitlab.example.com']],
    ['scp build.tgz deploy@10.1.2.3:/srv/releases/', ['10.1.2.3']],
    ['rsync -a dist/ "www@web.example.com:/var/www"', ['web.example.com']],
    ['nc 10.0.0.5 80', ['10.0.0.5']],
    ['nc -z 10.0.0.5:6379', ['10.0.0.5']],
    ['redis-cli -h=10.0.0.6 ping', ['10.0.0.6']],
    ['ping -c1 fe80::ab', ['fe80::ab']],
    ['ping ::ffff:10.0.0.1', ['::ffff:10.0.0.1']],
    ['curl -x http://proxy.internal:3128 https://example.com', ['proxy.internal', 'example.com']],
    ['curl http://a.example/1; curl http://A.example/2', ['a.example']],
  ])('%s -> %j', (command, hosts) => {
    expect(hostsNamedIn(command)).toEqual(hosts);
  });

  it('names a bare IPv6 address whose last group is decimal digits', () => {
    expect(hostsNamedIn('ping -6 2001:db8::1')).toEqual(['2001:db8::1']);
    expect(hostsNamedIn('nc ::1 80')).toEqual(['::1']);
  });

  it.each([
    'npm install lodash@4.17.21',
    'pip install "requests==2.31.0"',
    'echo v1.2.3 1.2.3 1.2.3.4.5 999.1.1.1',
    'git commit --author "A U Thor <author@example.com>" -m "fix: 1.2.3"',
    'git config user.email dev@example.com',
    'echo "mail me at someone@example.org"',
    'ls -la /srv/data:1',
    'date +%H:%M:%S',
    'docker run -p 8080:80 image:1.0',
    'python3 -c "print(1.5)"',
  ])('names no host in %j', (command) => {
    expect(hostsNamedIn(command)).toEqual([]);
  });
});

describe('AllowedIps.refusalFor', () => {
  const list = new AllowedIps(['192.168.0.0/16', '::1']);

  it('allows listed addresses, bracketed or not, and IPv4-mapped spellings of them', async () => {
    expect(await list.refusalFor('192.168.4.5')).toBeNull();
    expect(await list.refusalFor('::1')).toBeNull();
    expect(await list.refusalFor('[::1]')).toBeNull();
    expect(await list.refusalFor('::ffff:192.168.4.5')).toBeNull();
    expect(await list.refusalFor('[::ffff:192.168.4.5]')).toBeNull();
  });

  it('refuses other addresses with a sentence naming networkPolicy.allowedIps, the address and the list', async () => {
    expect(await list.refusalFor('10.9.9.9')).toBe('networkPolicy.allowedIps: 10.9.9.9 is not among the addresses agents may connect to (192.168.0.0/16, ::1)');
    expect(await list.refusalFor('[2001:db8::1]')).toBe(
      'networkPolicy.allowedIps: 2001:db8::1 is not among the addresses agents may connect to (192.168.0.0/16, ::1)',
    );
    expect(await list.refusalFor('::ffff:10.0.0.1')).toMatch(/^networkPolicy\.allowedIps: ::ffff:10\.0\.0\.1 is not among/);
  });

  it('resolves names: localhost reaches loopback, which only a list naming loopback allows', async () => {
    expect(await new AllowedIps(['10.0.0.0/8']).refusalFor('localhost')).toMatch(
      /^networkPolicy\.allowedIps: localhost \((127\.0\.0\.1|::1)\) is not among the addresses agents may connect to \(10\.0\.0\.0\/8\)$/,
    );
    expect(await new AllowedIps(['127.0.0.0/8', '::1']).refusalFor('localhost')).toBeNull();
    expect(await new AllowedIps(['127.0.0.0/8', '::1']).refusalFor('LOCALHOST')).toBeNull();
  });

  it('does not refuse a name that does not resolve (it cannot be reached either)', async () => {
    const started = Date.now();
    expect(await new AllowedIps(['10.0.0.0/8']).refusalFor('nowhere.invalid')).toBeNull();
    expect(Date.now() - started).toBeLessThan(3500);
  });
});

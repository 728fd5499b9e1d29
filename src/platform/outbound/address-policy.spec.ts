import { hostname } from 'node:os';
import { AllowedIps } from '../../agent/sandbox/network-policy';
import { ConfigError, loadConfig } from '../../config/app-config';
import {
  AddressPolicy,
  nonPublicReason,
  normalizeHost,
  parseAllowedHosts,
  type RefusedDestination,
  type VettedDestination,
} from '../../contract/address-policy';

describe('nonPublicReason', () => {
  it.each([
    '1.0.0.0',
    '1.1.1.1',
    '8.8.8.8',
    '93.184.215.14',
    '100.63.255.255', // just below carrier-grade NAT
    '100.128.0.0', // just above it
    '126.255.255.255',
    '128.0.0.0',
    '169.253.255.255',
    '169.255.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.167.255.255',
    '192.169.0.0',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2001:4860:4860::8888',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8', // IPv4-mapped public
    '64:ff9b::808:808', // NAT64 of 8.8.8.8
  ])('%s is public', (address) => {
    expect(nonPublicReason(address)).toBeNull();
  });

  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.0', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.0', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.0.1', 'link-local'],
    ['172.16.0.0', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['192.88.99.1', 'reserved'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['192.175.48.1', 'special-purpose'],
  ])('IPv4 %s is refused (%s)', (address, why) => {
    expect(nonPublicReason(address)).toContain(why);
  });

  it.each([
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['fc00::1', 'unique local'],
    ['fd12:3456:789a::1', 'unique local'],
    ['ff02::1', 'multicast'],
    ['ff05::1:3', 'multicast'],
    ['100::1', 'discard'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001:2::1', 'benchmarking'],
    ['2001:10::1', 'special-purpose'],
    ['5f00::1', 'special-purpose'],
    ['4000::1', 'outside 2000::/3'],
    ['1fff:ffff::1', 'outside 2000::/3'],
    ['::127.0.0.1', 'outside 2000::/3'], // IPv4-compatible (deprecated)
    ['::ffff:0:7f00:1', 'IPv4-translated'],
  ])('IPv6 %s is refused (%s)', (address, why) => {
    expect(nonPublicReason(address)).toContain(why);
  });

  it.each([
    ['::ffff:127.0.0.1', 'IPv4-mapped form of 127.0.0.1, a loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped form of 127.0.0.1, a loopback'],
    ['::ffff:10.1.2.3', 'IPv4-mapped form of 10.1.2.3, a private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped form of 169.254.169.254, a cloud metadata'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['64:ff9b::7f00:1', 'NAT64 form of 127.0.0.1, a loopback'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 form of 169.254.169.254, a cloud metadata'],
    ['64:ff9b::c0a8:101', 'NAT64 form of 192.168.1.1, a private'],
    ['64:ff9b:1::808:808', 'local-use NAT64'],
    ['2002:7f00:1::1', '6to4 address (it tunnels to 127.0.0.1)'],
    ['2002:808:808::1', '6to4 address (it tunnels to 8.8.8.8)'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo address (it tunnels through 65.54.227.120)'],
  ])('%s, an address carrying another, is refused: %s', (address, why) => {
    expect(nonPublicReason(address)).toContain(why);
  });

  it.each(['169.254.169.254', '169.254.170.2', '168.63.129.16', '100.100.100.200', 'fd00:ec2::254', 'fd00:ec2:0::254'])(
    '%s is a cloud metadata address',
    (address) => {
      expect(nonPublicReason(address)).toBe('a cloud metadata address');
    },
  );

  it.each(['localhost', '127.1', '2130706433', 'fe80::1%eth0', '', '1.2.3.4.5'])('%j is not an IP address', (value) => {
    expect(nonPublicReason(value)).toBe('not an IP address');
  });
});

describe('normalizeHost', () => {
  it.each([
    ['Example.COM', 'example.com'],
    ['localhost.', 'localhost'],
    ['LOCALHOST', 'localhost'],
    ['[::1]', '::1'],
    ['[0:0::1]', '::1'],
    ['[::127.0.0.1]', '::7f00:1'],
    ['[::FFFF:127.0.0.1]', '::ffff:7f00:1'],
    ['2001:DB8:0::1', '2001:db8::1'],
    ['10.0.0.1', '10.0.0.1'],
    ['under_score.example', 'under_score.example'],
  ])('%s is %s', (host, normalized) => {
    expect(normalizeHost(host)).toBe(normalized);
  });

  it.each([
    '',
    '.',
    'a..b',
    '-a.example',
    'a-.example',
    'ex ample.com',
    'a/b',
    'user@host',
    '[127.0.0.1]',
    '[fe80::1%eth0]',
    '[::1',
    'x'.repeat(64) + '.example',
  ])('%j is not a host', (host) => {
    expect(normalizeHost(host)).toBeNull();
  });
});

describe('parseAllowedHosts', () => {
  it('reads names, addresses and ports', () => {
    expect(parseAllowedHosts(['localhost', ' Models.Internal.:8443 ', '127.0.0.1', '[::1]:3000', '[FD00::1]'])).toEqual([
      { host: 'localhost' },
      { host: 'models.internal', port: 8443 },
      { host: '127.0.0.1' },
      { host: '::1', port: 3000 },
      { host: 'fd00::1' },
    ]);
  });

  it.each(['', '::1', 'host:0', 'host:65536', 'host:port', '[::1', '[zz::1]:80', '*.example.com', 'http://host'])('refuses %j', (entry) => {
    expect(() => parseAllowedHosts([entry])).toThrow(/Not a host/);
  });
});

describe('OUTBOUND_ALLOWED_HOSTS', () => {
  it('is empty unless set, and a list when set', () => {
    expect(loadConfig({}).outboundAllowedHosts).toEqual([]);
    expect(loadConfig({ OUTBOUND_ALLOWED_HOSTS: '' }).outboundAllowedHosts).toEqual([]);
    expect(loadConfig({ OUTBOUND_ALLOWED_HOSTS: 'localhost, models.internal:8443,[::1]:3000' }).outboundAllowedHosts).toEqual([
      'localhost',
      'models.internal:8443',
      '[::1]:3000',
    ]);
  });

  it('refuses what is not a list of hosts, naming the variable', () => {
    for (const value of ['*.example.com', 'http://x', 'a b', 'a,,b', 'a,']) {
      expect(() => loadConfig({ OUTBOUND_ALLOWED_HOSTS: value })).toThrow(ConfigError);
      expect(() => loadConfig({ OUTBOUND_ALLOWED_HOSTS: value })).toThrow(/OUTBOUND_ALLOWED_HOSTS: OUTBOUND_ALLOWED_HOSTS must be/);
    }
  });

  it('gives the policy entries it reads', () => {
    expect(() => new AddressPolicy({ allowedHosts: loadConfig({ OUTBOUND_ALLOWED_HOSTS: 'localhost, 10.0.0.5:5432' }).outboundAllowedHosts })).not.toThrow();
  });
});

describe('AddressPolicy.vet', () => {
  const refusal = async (policy: AddressPolicy, host: string, port = 80) => {
    const decision = await policy.vet(host, port);
    expect(decision.allowed).toBe(false);
    return (decision as RefusedDestination).reason;
  };
  const vetted = async (policy: AddressPolicy, host: string, port = 80) => {
    const decision = await policy.vet(host, port);
    expect(decision).toMatchObject({ allowed: true });
    return decision as VettedDestination;
  };

  it('lets a public address through to itself, without a lookup', async () => {
    const lookups: string[] = [];
    const policy = new AddressPolicy({ resolve: async (name) => (lookups.push(name), []) });
    expect(await vetted(policy, '8.8.8.8', 53)).toEqual({
      allowed: true,
      host: '8.8.8.8',
      port: 53,
      address: '8.8.8.8',
      addresses: ['8.8.8.8'],
      allowedByName: false,
    });
    expect(await vetted(policy, '[2606:4700:4700::1111]', 443)).toMatchObject({ address: '2606:4700:4700::1111' });
    expect(lookups).toEqual([]);
  });

  it('connects to an IPv4-mapped public address as plain IPv4', async () => {
    expect(await vetted(new AddressPolicy(), '[::ffff:8.8.8.8]')).toMatchObject({ address: '8.8.8.8', addresses: ['8.8.8.8'] });
  });

  it.each([
    ['127.0.0.1', '127.0.0.1 is a loopback address (127.0.0.0/8)'],
    ['[::1]', '[::1] is the loopback address (::1)'],
    ['0.0.0.0', '0.0.0.0 is an unspecified address (0.0.0.0/8)'],
    ['[::]', '[::] is the unspecified address (::)'],
    ['[::ffff:127.0.0.1]', '[::ffff:127.0.0.1] is an IPv4-mapped form of 127.0.0.1, a loopback address (127.0.0.0/8)'],
    ['[::127.0.0.1]', '[::127.0.0.1] is not a global unicast address (outside 2000::/3)'],
    ['10.1.2.3', '10.1.2.3 is a private address (RFC 1918)'],
    ['169.254.169.254', '169.254.169.254 is a cloud metadata address'],
    ['[fd00:ec2::254]', '[fd00:ec2::254] is a cloud metadata address'],
  ])('refuses the address %s', async (host, reason) => {
    expect(await refusal(new AddressPolicy(), host)).toBe(reason);
  });

  it.each([
    ['localhost', 'localhost is a loopback name (localhost)'],
    ['LOCALHOST', 'LOCALHOST is a loopback name (localhost)'],
    ['localhost.', 'localhost. is a loopback name (localhost)'],
    ['app.localhost', 'app.localhost is a loopback name (localhost)'],
    ['metadata.google.internal', 'metadata.google.internal is a cloud metadata service'],
    ['Metadata.Google.Internal.', 'Metadata.Google.Internal. is a cloud metadata service'],
    ['metadata', 'metadata is a cloud metadata service'],
    ['instance-data.ec2.internal', 'instance-data.ec2.internal is a cloud metadata service'],
  ])('refuses the name %s before looking it up', async (host, reason) => {
    const lookups: string[] = [];
    expect(await refusal(new AddressPolicy({ resolve: async (name) => (lookups.push(name), ['8.8.8.8']) }), host)).toBe(reason);
    expect(lookups).toEqual([]);
  });

  it.each(['127.1', '2130706433', '0x7f.1', '0177.0.0.1'])('looks up the numeric form %s as the system does, and refuses the loopback it is', async (host) => {
    expect(await refusal(new AddressPolicy(), host)).toBe(`${host} resolves to 127.0.0.1, a loopback address (127.0.0.0/8)`);
  });

  it("refuses this machine's own name, which resolves to a non-public address here", async () => {
    const name = hostname();
    const reason = await refusal(new AddressPolicy(), name);
    expect(reason).toMatch(new RegExp(`^${name.replace(/[.]/g, '\\.')} (resolves to|is a loopback name)`));
  });

  it('refuses a name when any one of its addresses is not public (a name cannot smuggle one in among others)', async () => {
    const policy = new AddressPolicy({ resolve: async () => ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', '10.0.0.7'] });
    expect(await refusal(policy, 'mixed.example')).toBe('mixed.example resolves to 10.0.0.7, a private address (RFC 1918)');
  });

  it('returns every address of a public name, the first to connect to', async () => {
    const policy = new AddressPolicy({ resolve: async () => ['2606:2800:21f:cb07:6820:80da:af6b:8b2c', '93.184.215.14', '::ffff:93.184.215.14'] });
    expect(await vetted(policy, 'Example.COM.', 443)).toEqual({
      allowed: true,
      host: 'example.com',
      port: 443,
      address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c',
      addresses: ['2606:2800:21f:cb07:6820:80da:af6b:8b2c', '93.184.215.14'],
      allowedByName: false,
    });
  });

  it('refuses a name that does not resolve, or not in time', async () => {
    expect(await refusal(new AddressPolicy(), 'no-such-host.invalid')).toBe('no-such-host.invalid does not resolve');
    const slow = new AddressPolicy({ resolve: () => new Promise(() => undefined), resolveTimeoutMs: 20 });
    expect(await refusal(slow, 'slow.example')).toBe('slow.example does not resolve within 20 ms');
    expect(await refusal(new AddressPolicy({ resolve: async () => [] }), 'empty.example')).toBe('empty.example does not resolve');
  });

  it.each(['', 'a b', 'user@host', 'host/path', '[127.0.0.1]', '[fe80::1%25eth0]', 'fe80::1%eth0', 'exa$mple.com'])(
    'refuses %j, which is not a host',
    async (host) => {
      expect(await refusal(new AddressPolicy(), host)).toMatch(/is not a valid host name or IP address$/);
    },
  );

  it.each([0, -1, 65536, 1.5, NaN])('refuses port %s', async (port) => {
    expect(await refusal(new AddressPolicy(), '8.8.8.8', port)).toBe(`${port} is not a valid port`);
  });

  describe("with the operator's exceptions", () => {
    const policy = new AddressPolicy({ allowedHosts: ['localhost', '127.0.0.1:5432', 'metadata.google.internal', '[::1]:8080', 'Db.Internal.'] });

    it('lets an allowed name through to the addresses it resolves to', async () => {
      expect(await vetted(policy, 'localhost', 3000)).toMatchObject({ host: 'localhost', address: '127.0.0.1', allowedByName: true });
      expect(await vetted(policy, 'LOCALHOST.', 3000)).toMatchObject({ host: 'localhost', address: '127.0.0.1', allowedByName: true });
    });

    it('lets an allowed address through on its port only', async () => {
      expect(await vetted(policy, '127.0.0.1', 5432)).toMatchObject({ address: '127.0.0.1', allowedByName: true });
      expect(await refusal(policy, '127.0.0.1', 5433)).toBe('127.0.0.1 is a loopback address (127.0.0.0/8)');
      expect(await vetted(policy, '[0::1]', 8080)).toMatchObject({ address: '::1' });
      expect(await refusal(policy, '[::1]', 8081)).toBe('[::1] is the loopback address (::1)');
    });

    it('matches exactly: no other spelling of an address, no suffix, no other name resolving alike', async () => {
      expect(await refusal(policy, '127.1', 5432)).toBe('127.1 resolves to 127.0.0.1, a loopback address (127.0.0.0/8)');
      expect(await refusal(policy, 'app.localhost', 3000)).toBe('app.localhost is a loopback name (localhost)');
      expect(await refusal(policy, '127.0.0.1', 3000)).toBe('127.0.0.1 is a loopback address (127.0.0.0/8)');
      expect(await refusal(policy, 'evil-localhost', 3000)).toMatch(/^evil-localhost does not resolve/);
    });

    it('lets a metadata name through only when it is listed', async () => {
      expect(await refusal(policy, 'metadata.google.internal')).toBe('metadata.google.internal does not resolve');
      expect(await refusal(policy, 'metadata.goog')).toBe('metadata.goog is a cloud metadata service');
    });

    it('still needs a listed name to resolve', async () => {
      expect(await refusal(policy, 'db.internal', 5432)).toBe('db.internal does not resolve');
    });
  });

  describe("with the organization's allowed IPs", () => {
    const allowedIps = new AllowedIps(['8.8.8.0/24', '2001:4860::/32', '127.0.0.1']);
    const policy = new AddressPolicy({ allowedHosts: ['localhost'] }).forOrganization(allowedIps);

    it('lets through public addresses inside them', async () => {
      expect(await vetted(policy, '8.8.8.8')).toMatchObject({ address: '8.8.8.8' });
      expect(await vetted(policy, '[2001:4860:4860::8888]')).toMatchObject({ address: '2001:4860:4860::8888' });
    });

    it('refuses public addresses outside them', async () => {
      expect(await refusal(policy, '1.1.1.1')).toBe(
        "1.1.1.1 is outside the organization's allowed IPs (networkPolicy.allowedIps: 8.8.8.0/24, 2001:4860::/32, 127.0.0.1)",
      );
      const resolving = new AddressPolicy({ resolve: async () => ['8.8.8.8', '1.1.1.1'] }).forOrganization(allowedIps);
      expect(await refusal(resolving, 'dns.example')).toMatch(/^dns\.example resolves to 1\.1\.1\.1, outside the organization's allowed IPs/);
    });

    it('never widens the address rules: a private address inside them is still refused', async () => {
      expect(await refusal(new AddressPolicy().forOrganization(new AllowedIps(['10.0.0.0/8'])), '10.0.0.1')).toBe('10.0.0.1 is a private address (RFC 1918)');
    });

    it("narrows the operator's exceptions too, and keeps them", async () => {
      expect(await vetted(policy, 'localhost', 3000)).toMatchObject({ address: '127.0.0.1', allowedByName: true });
      const narrower = new AddressPolicy({ allowedHosts: ['localhost'] }).forOrganization(new AllowedIps(['8.8.8.0/24']));
      expect(await refusal(narrower, 'localhost', 3000)).toMatch(/^localhost resolves to 127\.0\.0\.1, outside the organization's allowed IPs/);
    });
  });

  it('refuses a bad exception when built', () => {
    expect(() => new AddressPolicy({ allowedHosts: ['host:99999'] })).toThrow('Not a host, host:port or [IPv6]:port: "host:99999"');
  });
});

import { execFile } from 'node:child_process';
import { itInSandbox } from '../../../test/utils/sandbox';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AllowedIps } from './network-policy';
import { missingSandboxPackages, networkOnlyConfig, runtimeConfig, Sandbox, SandboxSettings, sandboxUnavailable } from './sandbox';

const settings = (fields: { filesystem?: Partial<SandboxSettings['filesystem']>; network?: Partial<SandboxSettings['network']> } = {}): SandboxSettings => ({
  enabled: true,
  filesystem: { allowWrite: [], allowRead: [], denyWrite: [], denyRead: [], ...fields.filesystem },
  network: { allowedDomains: [], allowUnixSockets: [], allowAllUnixSockets: false, allowLocalBinding: false, ...fields.network },
});

/** Every field set, each to a value of its own, so a field landing in the wrong place shows. */
const full = settings({
  filesystem: { allowWrite: ['/srv/cache'], allowRead: ['/home/dev/.ssh/known_hosts'], denyWrite: ['/srv/cache/locked'], denyRead: ['/home/dev/.ssh'] },
  network: {
    allowedDomains: [
      'github.com',
      '*.npmjs.org',
      '10.1.2.3',
      '10.1.2.3:8080',
      '11.0.0.1',
      '11.0.0.1:443',
      '[2001:db8::5]',
      '[2001:db9::5]:80',
      '[::ffff:10.0.0.9]',
      'intranet.example.com:8443',
    ],
    allowUnixSockets: ['/var/run/docker.sock'],
    allowAllUnixSockets: true,
    allowLocalBinding: true,
    httpProxyPort: 3128,
    socksProxyPort: 1080,
  },
});

/** Runs an ES module script with the sandbox runtime's own code (it ships ES modules only) and returns what it prints as JSON. */
function inRuntime(script: string, input: unknown): Promise<unknown> {
  const module = (path: string) => JSON.stringify(pathToFileURL(require.resolve(`@anthropic-ai/sandbox-runtime/${path}`)).href);
  const source = `
    import { SandboxRuntimeConfigSchema } from ${module('dist/index.js')};
    import { createResolvedAddressGuard } from ${module('dist/sandbox/resolved-address-guard.js')};
    const input = JSON.parse(process.argv[1]);
    ${script}`;
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['--input-type=module', '-e', source, JSON.stringify(input)], { env }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout));
    }),
  );
}

describe('runtimeConfig', () => {
  it("puts every field of the organization's settings where the runtime expects it", () => {
    expect(runtimeConfig(full, null, ['/work/ws', '/tmp/agent-sandbox-x/tmp'])).toEqual({
      filesystem: {
        allowWrite: ['/work/ws', '/tmp/agent-sandbox-x/tmp', '/srv/cache'],
        denyWrite: ['/srv/cache/locked'],
        denyRead: ['/home/dev/.ssh'],
        allowRead: ['/home/dev/.ssh/known_hosts'],
      },
      network: {
        allowedDomains: full.network.allowedDomains,
        deniedDomains: [],
        strictAllowlist: true,
        allowUnixSockets: ['/var/run/docker.sock'],
        allowAllUnixSockets: true,
        allowLocalBinding: true,
        httpProxyPort: 3128,
        socksProxyPort: 1080,
      },
    });
  });

  it('makes the workspace and the temporary folder writable before anything the organization lists', () => {
    const config = runtimeConfig(settings({ filesystem: { allowWrite: ['/b', '/a'] } }), null, ['/ws', '/tmp/t']) as { filesystem: { allowWrite: string[] } };
    expect(config.filesystem.allowWrite).toEqual(['/ws', '/tmp/t', '/b', '/a']);
    expect((runtimeConfig(settings(), null, ['/ws']) as { filesystem: { allowWrite: string[] } }).filesystem.allowWrite).toEqual(['/ws']);
  });

  it('names the proxy ports only when the organization sets them', () => {
    const network = (fields: Partial<SandboxSettings['network']>) =>
      (runtimeConfig(settings({ network: fields }), null, ['/ws']) as { network: Record<string, unknown> }).network;
    expect(network({})).not.toHaveProperty('httpProxyPort');
    expect(network({})).not.toHaveProperty('socksProxyPort');
    expect(network({ httpProxyPort: 8080 })).toMatchObject({ httpProxyPort: 8080 });
    expect(network({ httpProxyPort: 8080 })).not.toHaveProperty('socksProxyPort');
    expect(network({ socksProxyPort: 1081 })).toMatchObject({ socksProxyPort: 1081 });
    expect(network({ socksProxyPort: 1081 })).not.toHaveProperty('httpProxyPort');
  });

  it('takes the domain list as policy (strictAllowlist) and, without a networkPolicy, judges no resolved address', () => {
    const network = (runtimeConfig(settings({ network: { allowedDomains: ['github.com'] } }), null, ['/ws']) as { network: Record<string, unknown> }).network;
    expect(network.strictAllowlist).toBe(true);
    expect(network.deniedDomains).toEqual([]);
    expect(network).not.toHaveProperty('deniedResolvedAddresses');
  });

  it('under a networkPolicy, denies every resolved address outside it and drops the IP entries of allowedDomains outside it', () => {
    const allowedIps = new AllowedIps(['10.0.0.0/8', '2001:db8::/32']);
    const network = (runtimeConfig(full, allowedIps, ['/ws']) as { network: Record<string, unknown> }).network;
    expect(network.deniedResolvedAddresses).toEqual(allowedIps.complement());
    expect(network.allowedDomains).toEqual([
      'github.com',
      '*.npmjs.org',
      '10.1.2.3',
      '10.1.2.3:8080',
      '[2001:db8::5]',
      '[::ffff:10.0.0.9]',
      'intranet.example.com:8443',
    ]);
    expect(network.strictAllowlist).toBe(true);
    // The organization's list itself is left alone.
    expect(full.network.allowedDomains).toHaveLength(10);
  });

  it("nested in a computer's sandbox, asks the runtime to bind the /proc it has rather than mount one (which the kernel refuses there)", () => {
    expect(runtimeConfig(full, null, ['/ws'], { nested: true })).toMatchObject({ enableWeakerNestedSandbox: true });
    expect(runtimeConfig(full, null, ['/ws'])).not.toHaveProperty('enableWeakerNestedSandbox');
  });

  it('is a configuration the runtime accepts whole, with no key it does not know', async () => {
    const config = runtimeConfig(full, new AllowedIps(['10.0.0.0/8', '2001:db8::/32', '::ffff:192.168.0.0/112', '8.8.8.8']), ['/work/ws', '/tmp/t'], {
      nested: true,
    });
    const parsed = await inRuntime(
      `const result = SandboxRuntimeConfigSchema.safeParse(input);
       console.log(JSON.stringify(result.success ? { data: result.data } : { issues: result.error.issues }));`,
      config,
    );
    // zod drops keys it does not know: equal means every key was read.
    expect(parsed).toEqual({ data: config });
  });

  it("under a networkPolicy, lets a permitted name through the runtime's resolved-address check only to addresses inside it", async () => {
    const config = runtimeConfig(
      settings({ network: { allowedDomains: ['intranet.example.com', '*.corp.example.com'] } }),
      new AllowedIps(['10.0.0.0/8', '2001:db8::/32']),
      ['/ws'],
    ) as {
      network: Record<string, unknown>;
    };
    const cases: Array<[string, string]> = [
      ['intranet.example.com', '10.1.2.3'],
      ['build.corp.example.com', '10.200.0.1'],
      ['intranet.example.com', '2001:db8::7'],
      ['intranet.example.com', '::ffff:10.1.2.3'],
      ['intranet.example.com', '11.1.2.3'],
      ['intranet.example.com', '9.255.255.255'],
      ['intranet.example.com', '2001:db9::7'],
      ['intranet.example.com', '::ffff:11.1.2.3'],
    ];
    const permitted = await inRuntime(
      `const guard = createResolvedAddressGuard({ ...input.network, localAddresses: () => [] });
       console.log(JSON.stringify(input.cases.map(([host, address]) => guard.permits(host, address, 443))));`,
      { network: config.network, cases },
    );
    expect(Object.fromEntries(cases.map(([host, address], i) => [`${host} -> ${address}`, (permitted as boolean[])[i]]))).toEqual({
      'intranet.example.com -> 10.1.2.3': true,
      'build.corp.example.com -> 10.200.0.1': true,
      'intranet.example.com -> 2001:db8::7': true,
      'intranet.example.com -> ::ffff:10.1.2.3': true,
      'intranet.example.com -> 11.1.2.3': false,
      'intranet.example.com -> 9.255.255.255': false,
      'intranet.example.com -> 2001:db9::7': false,
      'intranet.example.com -> ::ffff:11.1.2.3': false,
    });
  });

  it('under a networkPolicy without loopback, drops localhost names (the runtime lets them reach loopback whatever the denied addresses)', () => {
    const domains = (allowedIps: string[]) =>
      (
        runtimeConfig(settings({ network: { allowedDomains: ['localhost', 'app.localhost:3000', 'example.com'] } }), new AllowedIps(allowedIps), ['/ws']) as {
          network: { allowedDomains: string[] };
        }
      ).network.allowedDomains;
    expect(domains(['10.0.0.0/8'])).toEqual(['example.com']);
    expect(domains(['127.0.0.1'])).toEqual(['example.com']); // ::1 is loopback too
    expect(domains(['127.0.0.0/8', '::1'])).toEqual(['localhost', 'app.localhost:3000', 'example.com']);
  });
});

describe('missingSandboxPackages', () => {
  let root: string;
  beforeEach(() => (root = realpathSync(mkdtempSync(join(tmpdir(), 'agent-sandbox-path-')))));
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const program = (dir: string, name: string, mode: number) => {
    mkdirSync(join(root, dir), { recursive: true });
    writeFileSync(join(root, dir, name), '#!/bin/sh\nexit 0\n');
    chmodSync(join(root, dir, name), mode);
  };

  it('names the Debian package of each program no folder of PATH holds as an executable file', () => {
    program('a', 'bwrap', 0o755);
    program('a', 'rg', 0o644);
    expect(missingSandboxPackages(join(root, 'a'))).toEqual(['socat', 'ripgrep']);
    program('b', 'socat', 0o700);
    expect(missingSandboxPackages([join(root, 'a'), join(root, 'b')].join(delimiter))).toEqual(['ripgrep']);
    program('c', 'rg', 0o755);
    expect(missingSandboxPackages([join(root, 'a'), join(root, 'b'), join(root, 'c')].join(delimiter))).toEqual([]);
  });

  it('finds nothing in an empty PATH, nor in empty entries (which are not taken for the current folder)', () => {
    expect(missingSandboxPackages('')).toEqual(['bubblewrap', 'socat', 'ripgrep']);
    program('.', 'bwrap', 0o755);
    const cwd = process.cwd();
    process.chdir(root);
    try {
      expect(missingSandboxPackages(`${delimiter}${delimiter}${join(root, 'missing')}`)).toEqual(['bubblewrap', 'socat', 'ripgrep']);
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('sandboxUnavailable', () => {
  it('names the missing packages, how to install them, and says nothing ran', () => {
    expect(sandboxUnavailable(['bubblewrap', 'socat'])).toBe(
      'Refused: the organization requires commands to run in a sandbox (sandbox.enabled), and this computer cannot make one: ' +
        'bubblewrap, socat are not installed (Debian: apt-get install bubblewrap socat ripgrep). ' +
        'Nothing ran: the agent never runs a command unsandboxed when a sandbox is required.',
    );
    expect(sandboxUnavailable(['ripgrep'])).toMatch(/: ripgrep is not installed \(Debian: apt-get install bubblewrap socat ripgrep\)\. Nothing ran:/);
  });
});

describe('Sandbox.confine', () => {
  let root: string;
  beforeEach(() => (root = realpathSync(mkdtempSync(join(tmpdir(), 'agent-sandbox-wrap-')))));
  afterEach(() => rmSync(root, { recursive: true, force: true }));
  const runner = resolve(__dirname, '..', '..', '..', 'dist', 'agent', 'sandbox', 'sandbox-runner.js');

  it('writes the configuration to a private file outside the workspace and runs the command through the runner', async () => {
    const sandbox = new Sandbox();
    const policy = { sandbox: full, networkPolicy: { allowedIps: ['10.0.0.0/8'] } };
    const wrapped = (await sandbox.confine('echo hi', policy, root))!;
    const temp = wrapped.env.TMPDIR;
    expect(wrapped.env).toEqual({ TMPDIR: temp, CLAUDE_CODE_TMPDIR: temp });
    expect(statSync(temp).isDirectory()).toBe(true);
    expect(temp.startsWith(root)).toBe(false);
    expect(wrapped.file).toBe(process.execPath);
    expect(wrapped.args).toEqual([runner, expect.any(String), 'echo hi']);
    const file = wrapped.args[1];
    expect(file.startsWith(root)).toBe(false);
    expect(file.startsWith(temp)).toBe(false);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ runtime: runtimeConfig(full, new AllowedIps(['10.0.0.0/8']), [root, temp]) });
    await wrapped.cleanup();
    expect(existsSync(file)).toBe(false);

    const again = (await sandbox.confine('true', { sandbox: full }, root))!;
    expect(again.env.TMPDIR).toBe(temp);
    expect(again.args[1]).not.toBe(file);
    await again.cleanup();
    // The folders live as long as the agent; this test's own go with it.
    rmSync(dirname(temp), { recursive: true, force: true });
  });

  it('confines only the network under networkPolicy.allowedIps without the sandbox, except inside a computer sandbox', async () => {
    const off = { ...full, enabled: false };
    const policy = { sandbox: off, networkPolicy: { allowedIps: ['10.0.0.0/8'] } };
    const sandbox = new Sandbox();
    expect(sandbox.required({ sandbox: off })).toBeNull();
    expect(await sandbox.confine('true', { sandbox: off }, root)).toBeNull();
    expect(sandbox.required(policy)).toBe('network');
    const wrapped = (await sandbox.confine('true', policy, root))!;
    expect(JSON.parse(readFileSync(wrapped.args[1], 'utf8'))).toEqual({
      runtime: networkOnlyConfig(new AllowedIps(['10.0.0.0/8'])),
      openNetworkWithin: ['10.0.0.0/8'],
    });
    await wrapped.cleanup();
    rmSync(dirname(wrapped.env.TMPDIR), { recursive: true, force: true });
    expect(new Sandbox({ nested: true }).required(policy)).toBeNull();
    expect(new Sandbox({ nested: true }).required({ ...policy, sandbox: full })).toBe('sandbox');
  });

  // How many of the runtime's two relays (ports 3128 and 1080) listen, in the sandbox's own network, as the command starts.
  const relaysListening = "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -cE ':(0C38|0438) [0-9A-F]+:0000 0A '";
  const run = (wrapped: { file: string; args: string[]; env: Record<string, string> }) =>
    new Promise<string>((done, fail) =>
      execFile(wrapped.file, wrapped.args, { env: { ...process.env, ...wrapped.env } }, (error, stdout, stderr) =>
        error ? fail(new Error(`${error.message}\n${stderr}`)) : done(stdout.trim()),
      ),
    );

  itInSandbox("starts a command only once the runtime's proxy relays listen, so that its first connection finds them", async () => {
    const sandbox = new Sandbox();
    const confined = [
      await sandbox.confine(relaysListening, { sandbox: settings() }, root),
      await sandbox.confine(relaysListening, { networkPolicy: { allowedIps: ['10.0.0.0/8'] } }, root),
    ];
    try {
      // Five runs of each: without the wait, the relays were seldom both up yet.
      for (const wrapped of confined) for (let i = 0; i < 5; i++) expect(await run(wrapped!)).toBe('2');
    } finally {
      for (const wrapped of confined) await wrapped!.cleanup();
      rmSync(dirname(confined[0]!.env.TMPDIR), { recursive: true, force: true });
    }
  });
});

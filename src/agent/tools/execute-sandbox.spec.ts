import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { missingSandboxPackages, SandboxSettings } from '../sandbox/sandbox';
import { executeTool } from './execute';
import { ToolPolicy } from './tool';
import { gone } from '../../../test/utils/process-state';

const missing = missingSandboxPackages();
// Without the programs these tests prove nothing: CI must have them (the block fails), a laptop may not (it is skipped).
const describeSandbox = missing.length === 0 || process.env.CI ? describe : describe.skip;
if (missing.length > 0 && !process.env.CI)
  console.warn(`Skipping the sandboxed Execute tests: ${missing.join(', ')} not installed (apt-get install bubblewrap socat ripgrep).`);

type SandboxFields = { filesystem?: Partial<SandboxSettings['filesystem']>; network?: Partial<SandboxSettings['network']>; enabled?: boolean };
const sandboxSettings = (fields: SandboxFields = {}): SandboxSettings => ({
  enabled: fields.enabled ?? true,
  filesystem: { allowWrite: [], allowRead: [], denyWrite: [], denyRead: [], ...fields.filesystem },
  network: { allowedDomains: [], allowUnixSockets: [], allowAllUnixSockets: false, allowLocalBinding: false, ...fields.network },
});

describeSandbox('Execute in the sandbox (sandbox.enabled)', () => {
  let root: string;
  let workspace: string;
  let servers: Server[] = [];
  let port: number;
  let requests = 0;
  /** The sandbox's temporary folder, which lives as long as the agent process: removed after the last test. */
  let sandboxTemp: string | undefined;

  const execute = (command: string, fields: SandboxFields & { allowedIps?: string[]; timeout?: number } = {}) => {
    const policy: ToolPolicy = { commandAllowlist: [], commandDenylist: [], commandBlocklist: [], sandbox: sandboxSettings(fields) };
    if (fields.allowedIps) policy.networkPolicy = { allowedIps: fields.allowedIps };
    return executeTool.run(fields.timeout === undefined ? { command } : { command, timeout: fields.timeout }, {
      workspace,
      policy,
      signal: new AbortController().signal,
    });
  };
  /** The command's output up to `[exit code N]`, as curl's -w prints it. */
  const status = (content: string) => content.replace(/\n\[exit code \d+\]$/, '');
  /**
   * The sandbox runtime's proxy refusing a connection (outside allowedDomains or networkPolicy.allowedIps): 403, or,
   * now and then, the connection closed without an answer (curl's 000; seen in CI for both rules). Either way the
   * host must never see the request, which each test counts right after. The allowed request is retried (curl
   * --retry-all-errors) when its connection to the proxy fails that way, never once answered.
   */
  const REFUSED = /^(403|000)$/;

  beforeAll(async () => {
    if (missing.length > 0) throw new Error(`The sandbox programs are missing: ${missing.join(', ')} (apt-get install bubblewrap socat ripgrep)`);
    const serve = () =>
      createServer((_request, response) => {
        requests++;
        response.end('hello from the host\n');
      });
    const v4 = serve();
    await new Promise<void>((resolve) => v4.listen(0, '127.0.0.1', resolve));
    port = (v4.address() as AddressInfo).port;
    servers = [v4];
    // localhost may resolve to ::1 first (as on Ubuntu): answer there too, where the host has IPv6.
    const v6 = serve();
    const listening = await new Promise<boolean>((resolve) => v6.once('error', () => resolve(false)).listen(port, '::1', () => resolve(true)));
    if (listening) servers.push(v6);
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    if (sandboxTemp?.startsWith(join(tmpdir(), 'agent-sandbox-'))) rmSync(dirname(sandboxTemp), { recursive: true, force: true });
  });
  beforeEach(() => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'agent-sandboxed-')));
    workspace = join(root, 'ws');
    mkdirSync(workspace);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('writes inside the workspace', async () => {
    expect(await execute('echo made > inside.txt && mkdir -p sub && echo deep > sub/f && cat inside.txt')).toEqual({
      content: 'made\n[exit code 0]',
      isError: false,
    });
    expect(readFileSync(join(workspace, 'inside.txt'), 'utf8')).toBe('made\n');
    expect(readFileSync(join(workspace, 'sub', 'f'), 'utf8')).toBe('deep\n');
  });

  it('cannot write outside the workspace: the file system there is read-only', async () => {
    const outside = join(root, 'outside');
    mkdirSync(outside);
    const result = await execute(`echo escaped > ${outside}/file`);
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/Read-only file system\n\[exit code [12]\]$/);
    expect(existsSync(join(outside, 'file'))).toBe(false);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('cannot read a denyRead file that the same command reads without the sandbox', async () => {
    mkdirSync(join(root, 'private'));
    const secret = join(root, 'private', 'secret.txt');
    writeFileSync(secret, 'the secret\n');
    const filesystem = { denyRead: [secret] };
    const sandboxed = await execute(`cat ${secret}`, { filesystem });
    expect(sandboxed.isError).toBe(true);
    expect(sandboxed.content).toMatch(/Permission denied\n\[exit code 1\]$/);
    expect(sandboxed.content).not.toContain('the secret');
    expect(await execute(`cat ${secret}`, { filesystem, enabled: false })).toEqual({ content: 'the secret\n[exit code 0]', isError: false });
  });

  it('gives the command a writable $TMPDIR of its own, not /tmp, which stays read-only', async () => {
    const probe = `agent-sandbox-probe-${process.pid}-${Date.now()}`;
    const result = await execute(
      `printf '%s\\n' "$TMPDIR"; echo data > "$TMPDIR/${probe}" && cat "$TMPDIR/${probe}"; touch /tmp/${probe} 2>/dev/null || echo "/tmp refused"`,
    );
    expect(result.isError).toBe(false);
    const [dir, ...rest] = result.content.split('\n');
    expect(dir).toMatch(/^\/.+/);
    expect(dir.replace(/\/+$/, '')).not.toBe('/tmp');
    expect(dir.startsWith(workspace)).toBe(false);
    sandboxTemp = dir;
    expect(rest).toEqual(['data', '/tmp refused', '[exit code 0]']);
    expect(existsSync(join('/tmp', probe))).toBe(false);
  });

  it("adds the co-author trailer to a commit made in the sandbox, and keeps the repository's own hooks running", async () => {
    const git = (args: string) => `git -c user.email=dev@example.com -c user.name=Dev ${args}`;
    const policy: ToolPolicy = {
      commandAllowlist: [],
      commandDenylist: [],
      commandBlocklist: [],
      sandbox: sandboxSettings(),
      includeCoAuthoredByAgent: true,
    };
    mkdirSync(join(workspace, '.git-hooks-probe'));
    const run = (command: string) => executeTool.run({ command }, { workspace, policy, signal: new AbortController().signal });
    const made = await run(
      `git init -q && printf '#!/bin/sh\necho own-hook-ran > .git-hooks-probe/ran\n' > .git/hooks/post-commit && chmod +x .git/hooks/post-commit && ` +
        `echo a > a.txt && git add a.txt && ${git('commit -qm "Add a"')} && git log -1 --format=%B`,
    );
    expect(made).toMatchObject({ isError: false, content: 'Add a\n\nCo-authored-by: Agent Platform <agent@agent-platform.invalid>\n\n[exit code 0]' });
    expect(readFileSync(join(workspace, '.git-hooks-probe/ran'), 'utf8')).toBe('own-hook-ran\n');
  });

  it('cannot connect directly to a server on the host', async () => {
    const before = requests;
    const result = await execute(`curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:${port}/; echo "curl exit $?"`);
    expect(result.content).toMatch(/curl exit 7\n\[exit code 0\]$/);
    expect(result.content).not.toContain('hello from the host');
    expect(requests).toBe(before);
  });

  it('reaches, through its proxy, an address allowedDomains names, unless networkPolicy.allowedIps leaves it out', async () => {
    // The host is computed so that the pre-check, which reads the command, cannot see it: this is the sandbox's doing.
    const command = `curl -s -o /dev/null -w '%{http_code}' --noproxy '' --retry 3 --retry-all-errors --retry-delay 1 --max-time 10 http://$(printf 127.0.0.%s 1):${port}/`;
    const network = { allowedDomains: [`127.0.0.1:${port}`] };
    const before = requests;
    expect(status((await execute(command, { network })).content)).toBe('200');
    expect(requests).toBe(before + 1);
    expect(status((await execute(command, { network, allowedIps: ['10.0.0.0/8'] })).content)).toMatch(REFUSED);
    expect(requests).toBe(before + 1);
    expect(status((await execute(command, { network: { allowedDomains: [] } })).content)).toMatch(REFUSED);
    expect(requests).toBe(before + 1);
  });

  it('reaches by the name localhost only what networkPolicy.allowedIps allows', async () => {
    const command = `curl -s -o /dev/null -w '%{http_code}' --noproxy '' --retry 3 --retry-all-errors --retry-delay 1 --max-time 10 http://$(printf local%s host):${port}/`;
    const network = { allowedDomains: [`localhost:${port}`] };
    const before = requests;
    expect(status((await execute(command, { network })).content)).toBe('200');
    expect(requests).toBe(before + 1);
    expect(status((await execute(command, { network, allowedIps: ['10.0.0.0/8'] })).content)).toMatch(REFUSED);
    expect(requests).toBe(before + 1);
  });

  it('refuses before running anything a command that names a host outside networkPolicy.allowedIps', async () => {
    expect(await execute('touch ran; curl http://10.9.9.9/', { allowedIps: ['192.168.0.0/16'] })).toEqual({
      content:
        "Refused by the organization's networkPolicy.allowedIps: 10.9.9.9 is not among the addresses agents may connect to (192.168.0.0/16); nothing ran.",
      isError: true,
    });
    expect(existsSync(join(workspace, 'ran'))).toBe(false);
  });

  describe('networkPolicy.allowedIps without sandbox.enabled (a computer of its owner, BYOM)', () => {
    const off = { enabled: false };
    // The host is computed so that the pre-check, which reads the command, cannot see it: the runtime's proxy is what refuses.
    const curl = (host: string) =>
      `curl -s -o /dev/null -w '%{http_code}' --noproxy '' --retry 3 --retry-all-errors --retry-delay 1 --max-time 10 http://$(printf ${host}):${port}/`;

    it('reaches an address inside the list, and not one outside it, whatever the command computes', async () => {
      const before = requests;
      expect(status((await execute(curl('127.0.0.%s 1'), { ...off, allowedIps: ['127.0.0.1'] })).content)).toBe('200');
      expect(requests).toBe(before + 1);
      expect(status((await execute(curl('127.0.0.%s 1'), { ...off, allowedIps: ['10.0.0.0/8'] })).content)).toMatch(REFUSED);
      expect(status((await execute(curl('local%s host'), { ...off, allowedIps: ['10.0.0.0/8'] })).content)).toMatch(REFUSED);
      expect(requests).toBe(before + 1);
    });

    it('cannot go around the proxy: a direct connection finds no network', async () => {
      const before = requests;
      const direct = `curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:${port}/; echo "curl exit $?"`;
      const node = `node -e "require('net').connect(${port}, '127.0.0.1').on('connect', () => console.log('connected')).on('error', (e) => console.log(e.code))"`;
      const result = await execute(`${direct}; ${node}`, { ...off, allowedIps: ['127.0.0.1'] });
      expect(result.content).toMatch(/curl exit 7\n(ECONNREFUSED|ENETUNREACH)\n\[exit code 0\]$/);
      expect(requests).toBe(before);
      // Without the list, the same command is not confined: it is the list that takes the network away.
      expect((await execute(direct, off)).content).toContain('hello from the host');
    });

    it('leaves the file system as it is: the command writes outside the workspace', async () => {
      const result = await execute('echo out > ../outside.txt && cat ../outside.txt', { ...off, allowedIps: ['10.0.0.0/8'] });
      expect(result).toEqual({ content: 'out\n[exit code 0]', isError: false });
      expect(readFileSync(join(root, 'outside.txt'), 'utf8')).toBe('out\n');
    });

    it('refuses, running nothing, on a computer that cannot enforce the list', async () => {
      const bin = join(root, 'bin');
      mkdirSync(bin);
      const path = process.env.PATH;
      process.env.PATH = bin;
      let result;
      try {
        result = await execute('touch ran', { ...off, allowedIps: ['10.0.0.0/8'] });
      } finally {
        process.env.PATH = path;
      }
      expect(result).toEqual({
        content:
          'Refused: the organization limits the addresses agents may connect to (networkPolicy.allowedIps), and this computer cannot enforce that limit on commands: ' +
          'bubblewrap, socat, ripgrep are not installed (Debian: apt-get install bubblewrap socat ripgrep). ' +
          'Nothing ran: the agent never runs a command outside the network limit the organization sets.',
        isError: true,
      });
      expect(existsSync(join(workspace, 'ran'))).toBe(false);
    });
  });

  it('kills a command that outlives its timeout, with what it started', async () => {
    const duration = `${1000 + (process.pid % 1000)}.${Date.now() % 100_000}`;
    const command = `sleep ${duration} & sleep ${duration}`;
    const pids = () =>
      readdirSync('/proc')
        .filter((entry) => /^\d+$/.test(entry))
        .filter((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === `sleep\0${duration}\0`;
          } catch {
            return false;
          }
        })
        .map(Number);
    // Generous timeout: under load the sandbox can take seconds to start, and both sleeps must be seen running.
    const running = execute(command, { timeout: 6 });
    let settled = false;
    void running.finally(() => (settled = true));
    let seen: number[] = [];
    while (seen.length < 2 && !settled) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      seen = pids();
    }
    expect(seen).toHaveLength(2);
    // The sleeps last over 1,000 s: an answer at all means the timeout killed them.
    expect(await running).toEqual({ content: '(no output)\n[killed after 6 s]', isError: true });
    for (const pid of seen) expect(await gone(pid)).toBe(true);
  });

  it('runs without the agent configuration (AGENT_*) in its environment', async () => {
    process.env.AGENT_TEST_SECRET = 'sk-sandbox-secret';
    process.env.TOOLS_TEST_VISIBLE = 'visible';
    try {
      const result = await execute('env');
      expect(result.isError).toBe(false);
      expect(result.content).toMatch(/^TOOLS_TEST_VISIBLE=visible$/m);
      expect(result.content).not.toMatch(/AGENT_|sk-sandbox-secret/);
    } finally {
      delete process.env.AGENT_TEST_SECRET;
      delete process.env.TOOLS_TEST_VISIBLE;
    }
  });

  it('refuses, running nothing, when the sandbox programs are missing', async () => {
    const bin = join(root, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'rg'), '#!/bin/sh\n');
    chmodSync(join(bin, 'rg'), 0o755);
    const path = process.env.PATH;
    process.env.PATH = bin;
    let result;
    try {
      result = await execute('touch ran');
    } finally {
      process.env.PATH = path;
    }
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/^Refused: the organization requires commands to run in a sandbox \(sandbox\.enabled\)/);
    expect(result.content).toContain('bubblewrap, socat are not installed');
    expect(result.content).toContain('Nothing ran');
    expect(existsSync(join(workspace, 'ran'))).toBe(false);
    expect(await execute('touch ran')).toEqual({ content: '(no output)\n[exit code 0]', isError: false });
    expect(existsSync(join(workspace, 'ran'))).toBe(true);
  });

  it('runs nothing when the runtime refuses the settings (a single-label domain)', async () => {
    const result = await execute('touch ran', { network: { allowedDomains: ['intranet'] } });
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(
      /^Refused: the sandbox settings do not hold a valid config \(network.allowedDomains.0: [\s\S]*nothing ran\.\n\[exit code 1\]$/,
    );
    expect(existsSync(join(workspace, 'ran'))).toBe(false);
  });
});

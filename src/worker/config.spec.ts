import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Machine, readConfig, WorkerConfig, WorkerConfigError } from './config';

describe('The worker configuration', () => {
  const home = mkdtempSync(join(tmpdir(), 'ap-worker-config-'));
  const tokenFile = join(home, 'token');
  writeFileSync(tokenFile, 'wkt_from_the_file\n', { mode: 0o600 });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  const machine: Machine = { hostname: () => 'rack-2.lab.example', cpus: () => 16, memoryMb: () => 32 * 1024, diskMb: () => 200_000 };
  const read = (argv: string[], env: Record<string, string> = {}) =>
    readConfig(['--url', 'https://agents.example.com/', ...argv], { WORKER_DATA_DIR: join(home, 'data'), ...env }, machine) as WorkerConfig;
  const refusal = (argv: string[], env: Record<string, string> = {}): string => {
    try {
      readConfig(argv, { WORKER_DATA_DIR: join(home, 'data'), ...env }, machine);
    } catch (error) {
      if (error instanceof WorkerConfigError) return error.message;
      throw error;
    }
    throw new Error('accepted');
  };

  it("takes the machine's defaults, one computer per CPU and 4 GiB, and makes the data folder readable by its user only", () => {
    const dataDir = join(home, 'fresh', 'data');
    expect(read(['--token-file', tokenFile, '--data-dir', dataDir])).toEqual({
      url: 'https://agents.example.com',
      enrollmentToken: 'wkt_from_the_file',
      dataDir,
      name: 'rack-2.lab.example',
      hostname: 'rack-2.lab.example',
      labels: [],
      capacity: { computers: 8, cpus: 16, memoryMb: 32768, diskMb: 200_000 },
      sandboxed: true,
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      // The server's defaults for its own computers.
      host: {
        localReposDir: undefined,
        installScripts: false,
        workspaceMaxMb: 10_240,
        memoryMb: 4096,
        cpuSeconds: 3600,
        processes: 512,
        outboundAllowedHosts: [],
      },
    });
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
  });

  it('takes what the environment and the options say, an option over its variable', () => {
    const config = read(['--name', 'gpu-01', '--labels', 'gpu,arch=arm64', '--token-file', tokenFile], {
      WORKER_TOKEN: 'wkt_from_the_environment',
      WORKER_LABELS: 'ignored',
      WORKER_CAPACITY_COMPUTERS: '3',
      WORKER_CPUS: '2',
      WORKER_MEMORY_MB: '2048',
      WORKER_DISK_MB: '5000',
      LOCAL_SANDBOX: 'off',
    });
    expect(config).toMatchObject({
      enrollmentToken: 'wkt_from_the_file',
      name: 'gpu-01',
      labels: ['gpu', 'arch=arm64'],
      capacity: { computers: 3, cpus: 2, memoryMb: 2048, diskMb: 5000 },
      sandboxed: false,
    });
    // The computers' settings are the server's, by the same names.
    expect(
      read([], {
        WORKER_TOKEN: 'wkt_x',
        LOCAL_REPOS_DIR: '/srv/repos',
        LOCAL_INSTALL_SCRIPTS: 'true',
        LOCAL_WORKSPACE_MAX_MB: '2048',
        LOCAL_SANDBOX_PROCESSES: '64',
        OUTBOUND_ALLOWED_HOSTS: 'git.internal, npm.internal:8443',
      }).host,
    ).toMatchObject({
      localReposDir: '/srv/repos',
      installScripts: true,
      workspaceMaxMb: 2048,
      processes: 64,
      outboundAllowedHosts: ['git.internal', 'npm.internal:8443'],
    });
    expect(refusal(['--url', 'https://agents.example.com'], { WORKER_TOKEN: 'wkt_x', LOCAL_SANDBOX_PROCESSES: '4' })).toBe(
      'LOCAL_SANDBOX_PROCESSES must be a whole number from 8 to 1000000, not 4.',
    );
    // A small machine still holds one computer.
    expect(read([], { WORKER_TOKEN: 'wkt_x', WORKER_MEMORY_MB: '2048' }).capacity.computers).toBe(1);
  });

  it('refuses a token on the command line, with or without its value, without saying it back', () => {
    for (const argv of [['--token', 'wkt_secret'], ['--token=wkt_secret'], ['--token']]) {
      const message = refusal(['--url', 'http://127.0.0.1:9', ...argv]);
      expect(message).toMatch(/--token is not accepted.*ps.*WORKER_TOKEN.*--token-file/s);
      expect(message).not.toContain('wkt_secret');
    }
  });

  it('asks for the server and the token, and says what a setting must be, naming where it came from', () => {
    expect(refusal([], { WORKER_TOKEN: 'wkt_x' })).toBe("The server's URL (--url <base_url>) is required.");
    expect(refusal(['--url', 'http://127.0.0.1:9'])).toMatch(/enrollment token is required.*--token-file.*WORKER_TOKEN_FILE.*WORKER_TOKEN/);
    for (const url of ['ftp://example.com', 'https://user:secret@example.com', 'http://exa mple.com', 'http://[::1']) {
      expect(refusal(['--url', url], { WORKER_TOKEN: 'wkt_x' })).toMatch(/^--url must be an http:\/\/ or https:\/\/ base URL/);
    }
    expect(refusal(['--url', 'https://user:secret@example.com'], { WORKER_TOKEN: 'wkt_x' })).toMatch(/not "https:\/\/\*\*\*@example\.com"\.$/);
    expect(refusal(['--url', 'http://x', '--labels', 'GPU'], { WORKER_TOKEN: 'wkt_x' })).toMatch(/^--labels must be .*not "GPU"\.$/);
    expect(refusal(['--url', 'http://x'], { WORKER_TOKEN: 'wkt_x', WORKER_LABELS: Array.from({ length: 17 }, (_, i) => `l${i}`).join(',') })).toMatch(
      /^WORKER_LABELS must be at most 16/,
    );
    expect(refusal(['--url', 'http://x'], { WORKER_TOKEN: 'wkt_x', WORKER_CPUS: '1.5' })).toBe('WORKER_CPUS must be a whole number from 1 to 1024, not "1.5".');
    expect(refusal(['--url', 'http://x'], { WORKER_TOKEN: 'wkt_x', WORKER_CAPACITY_COMPUTERS: '0' })).toMatch(/^WORKER_CAPACITY_COMPUTERS must be/);
    expect(refusal(['--url', 'http://x'], { WORKER_TOKEN: 'wkt_x', LOCAL_SANDBOX: 'maybe' })).toBe('LOCAL_SANDBOX must be on or off, not "maybe".');
    expect(refusal(['--url', 'http://x', '--nope'], { WORKER_TOKEN: 'wkt_x' })).toMatch(/Unknown option '--nope'/);
  });

  it('refuses an empty or unreadable token file, naming the file and not the token', () => {
    const empty = join(home, 'empty');
    writeFileSync(empty, '  \n', { mode: 0o600 });
    expect(refusal(['--url', 'http://x', '--token-file', empty])).toBe(
      `The token file ${empty} is empty: it must hold a worker pool's enrollment token (wkt_...).`,
    );
    expect(refusal(['--url', 'http://x'], { WORKER_TOKEN_FILE: join(home, 'missing') })).toMatch(/^The token file \S+missing cannot be read: ENOENT/);
  });

  it('--help is asked for before anything is checked', () => {
    expect(readConfig(['--help'], {}, machine)).toBe('help');
  });
});

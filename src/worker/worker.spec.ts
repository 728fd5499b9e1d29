import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkerConfig } from './config';
import { Worker } from './worker';
import { WorkerClient } from './worker-client';

const LEASE_MS = 1500;
const HEARTBEAT_MS = 50;

/**
 * The worker's lease keeping against a scripted server: what it does when the server is away for a while, away past
 * the lease, ends its session, or refuses its token. Each scenario answers by path and counts the calls.
 */
describe('Worker', () => {
  let server: Server;
  let url: string;
  let dataDir: string;
  let calls: string[];
  let answer: (path: string, res: ServerResponse, req: IncomingMessage) => void;
  let lines: string[];

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        calls.push(req.url ?? '');
        answer(req.url ?? '', res, req);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'ap-worker-'));
    calls = [];
    lines = [];
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  /** A heartbeat's answer: nothing placed on the worker. */
  const beat = (res: ServerResponse) => json(res, 200, { leaseExpiresAt: Date.now() + LEASE_MS, lostSteps: [], computers: [] });
  let registered = 0;
  const registration = (res: ServerResponse) =>
    json(res, 201, {
      workerId: `w-${++registered}`,
      poolId: 'p-1',
      poolName: 'gpu-lab',
      sessionToken: `wks_session_${registered}`,
      capacity: { computers: 2, cpus: 4, memoryMb: 8192, diskMb: 1000 },
      leaseMs: LEASE_MS,
      heartbeatMs: HEARTBEAT_MS,
      leaseExpiresAt: Date.now() + LEASE_MS,
    });
  const ended = (res: ServerResponse, workerStatus: string) =>
    json(res, 401, {
      detail: `This worker's session ended (${workerStatus}).`,
      status: 401,
      title: 'Unauthorized',
      metadata: { code: 'invalid_worker_token', workerStatus },
    });

  function start(): { worker: Worker; done: Promise<number> } {
    const config: WorkerConfig = {
      url,
      enrollmentToken: 'wkt_enrollment',
      dataDir,
      name: 'w',
      hostname: 'w.lab.example',
      labels: [],
      capacity: { computers: 2, cpus: 4, memoryMb: 8192, diskMb: 1000 },
      sandboxed: true,
      version: '0.1.0',
      host: { localReposDir: undefined, installScripts: false, workspaceMaxMb: 100, memoryMb: 1024, cpuSeconds: 60, processes: 64, outboundAllowedHosts: [] },
    };
    const log = (line: string) => lines.push(line);
    const worker = new Worker(config, new WorkerClient(url, log), log);
    return { worker, done: worker.run() };
  }
  const saved = () => JSON.parse(readFileSync(join(dataDir, 'worker.json'), 'utf8')) as { workerId: string; sessionToken: string };
  const count = (path: string) => calls.filter((call) => call === path).length;
  async function until(condition: () => boolean, what: string): Promise<void> {
    for (let waited = 0; !condition(); waited += 10) {
      if (waited > 10_000) throw new Error(`Timed out waiting for ${what}; calls: ${calls.join(' ')}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('rides out a server away for less than its lease: heartbeats resume on the same session, no new registration', async () => {
    let away = false;
    answer = (path, res) => {
      if (path === '/api/v0/worker/register') return registration(res);
      if (path === '/api/v0/worker/heartbeat') return away ? json(res, 503, {}) : beat(res);
      res.writeHead(204).end();
    };
    const { worker, done } = start();
    await until(() => count('/api/v0/worker/heartbeat') >= 2, 'heartbeats');
    away = true;
    const before = calls.length;
    await until(() => calls.length >= before + 3, 'failed heartbeats');
    away = false;
    const renewed = count('/api/v0/worker/heartbeat');
    await until(() => count('/api/v0/worker/heartbeat') >= renewed + 2, 'heartbeats again');
    worker.stop();
    expect(await done).toBe(0);
    expect(count('/api/v0/worker/register')).toBe(1);
    expect(calls.at(-1)).toBe('/api/v0/worker/leave');
    expect(lines.some((line) => /heartbeat failed \(.*503/.test(line))).toBe(true);
  });

  it('registers anew once the server has been away past its lease', async () => {
    let away = false;
    answer = (path, res) => {
      if (path === '/api/v0/worker/register') return away ? json(res, 503, {}) : registration(res);
      if (path === '/api/v0/worker/heartbeat') return away ? json(res, 503, {}) : beat(res);
      res.writeHead(204).end();
    };
    const { worker, done } = start();
    await until(() => count('/api/v0/worker/heartbeat') >= 1, 'a heartbeat');
    const first = saved().workerId;
    away = true;
    await until(() => lines.some((line) => line.includes('has lapsed')), 'the lease to lapse');
    away = false;
    await until(() => existsSync(join(dataDir, 'worker.json')) && saved().workerId !== first, 'a new registration');
    worker.stop();
    expect(await done).toBe(0);
    expect(lines.filter((line) => line.startsWith('registered as '))).toHaveLength(2);
  });

  it('exits 1 when the server ends its session (evicted), forgetting it; a saved session that ended is replaced at start', async () => {
    answer = (path, res) => {
      if (path === '/api/v0/worker/register') return registration(res);
      if (path === '/api/v0/worker/heartbeat') return count('/api/v0/worker/heartbeat') > 2 ? ended(res, 'evicted') : beat(res);
      res.writeHead(204).end();
    };
    expect(await start().done).toBe(1);
    expect(lines.at(-1)).toMatch(/^The server ended this worker's session \(evicted\)/);
    expect(existsSync(join(dataDir, 'worker.json'))).toBe(false);

    // A session saved before a long stop, lost meanwhile: the first heartbeat says so, and the worker registers.
    writeFileSync(
      join(dataDir, 'worker.json'),
      JSON.stringify({ workerId: 'w-old', sessionToken: 'wks_old', url, poolName: 'gpu-lab', heartbeatMs: HEARTBEAT_MS, leaseMs: LEASE_MS }),
    );
    calls = [];
    answer = (path, res, req) => {
      if (path === '/api/v0/worker/register') return registration(res);
      if (path === '/api/v0/worker/heartbeat') return req.headers.authorization === 'Bearer wks_old' ? ended(res, 'lost') : beat(res);
      res.writeHead(204).end();
    };
    const { worker, done } = start();
    await until(() => count('/api/v0/worker/register') === 1, 'a registration');
    worker.stop();
    expect(await done).toBe(0);
    expect(lines).toContain('the saved session of w-old has ended (lost): registering anew');
  });

  it('exits 1 when its enrollment token is refused, saying why and not the token', async () => {
    answer = (_, res) =>
      json(res, 401, { detail: 'The enrollment token has been revoked.', status: 401, title: 'Unauthorized', metadata: { code: 'invalid_worker_token' } });
    expect(await start().done).toBe(1);
    expect(lines.at(-1)).toBe('The server refused to register this worker: 401: The enrollment token has been revoked.');
    expect(lines.join('\n')).not.toContain('wkt_enrollment');
  });

  it('stops at once while the server cannot be reached to register it', async () => {
    answer = (_, res) => json(res, 503, {});
    const { worker, done } = start();
    await until(() => calls.length >= 2, 'registration attempts');
    worker.stop();
    expect(await done).toBe(0);
  });
});

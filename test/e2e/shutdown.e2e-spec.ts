import { randomUUID } from 'node:crypto';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { LONG_WAIT_MS, until } from '../utils/polling';
import { PROCESSES_TIMEOUT_MS, ServerProcess, startServer } from '../utils/processes';
import { startTestApp } from '../utils/test-app';
import { createTestDatabase, TestDatabase } from '../utils/test-database';

const METRICS_TOKEN = 'm'.repeat(40);

/**
 * SIGTERM as a load balancer and its clients meet it, on the real process: first a drain (the instance still serves,
 * `/healthz` says 503 so the balancer stops sending, waiting long polls and streams are answered at once), then it stops
 * listening, finishes what is in flight, closes the database and exits 0 with no error-level line.
 */
describe('Stopping an instance (real process)', () => {
  let database: TestDatabase;
  let server: ServerProcess | undefined;
  let owner: TestUser;

  beforeAll(async () => {
    database = await createTestDatabase();
    const seed = await startTestApp({}, database);
    owner = await createUser(seed, Role.Owner);
    await seed.app.close();
  }, PROCESSES_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop();
    await database.drop();
  });

  it(
    'drains, then stops: healthz 503 shutting_down while requests are still served, long polls and streams answered, exit 0, no error',
    async () => {
      // Long enough that nothing in this test can finish by running into the drain's end.
      server = await startServer([], { ...database.env, SHUTDOWN_DRAIN_MS: '60000', PROVISIONING_CONCURRENCY: '0', METRICS_TOKEN });
      const url = server.url;
      const headers = { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json' };
      const computer = await fetch(`${url}/api/v0/computers`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'drained', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' }),
      });
      const { agentToken } = (await computer.json()) as { agentToken: string };
      const agent = { authorization: `Bearer ${agentToken}`, 'content-type': 'application/json' };

      const polls = Array.from({ length: 3 }, () =>
        fetch(`${url}/api/v0/agent/claims`, { method: 'POST', headers: agent, body: JSON.stringify({ waitMs: 25_000 }) }).then(async (res) => ({
          status: res.status,
          body: (await res.json()) as unknown,
        })),
      );
      const stream = await fetch(`${url}/api/v0/events`, { headers: { ...headers, accept: 'text/event-stream' } });
      expect(stream.status).toBe(200);
      const streamText = stream.text();
      const waiting = async () => {
        const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
        return Number(/^agent_platform_long_polls_open (\S+)$/m.exec(text)?.[1] ?? NaN);
      };
      await until(waiting, (open) => open === 3, 'the three long polls to wait', LONG_WAIT_MS);

      const from = server.output().length;
      server.child.kill('SIGTERM');
      // Answered now, not after their 25 s: empty, as a poll that found nothing.
      expect(await Promise.all(polls)).toEqual(Array.from({ length: 3 }, () => ({ status: 200, body: { work: null } })));
      expect(await streamText).toMatch(/^retry: \d+\n/);
      // The load balancer's probe says stop sending; the instance still serves what arrives meanwhile.
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(503);
      expect(health.headers.get('retry-after')).toBe('1');
      expect(((await health.json()) as { metadata: { code: string } }).metadata.code).toBe('shutting_down');
      expect((await fetch(`${url}/api/v0/sessions`, { headers })).status).toBe(200);
      // A claim arriving now does not wait either.
      const late = await fetch(`${url}/api/v0/agent/claims`, { method: 'POST', headers: agent, body: JSON.stringify({ waitMs: 25_000 }) });
      expect(await late.json()).toEqual({ work: null });

      // A second signal ends the drain: it stops listening, closes the database and exits cleanly.
      server.child.kill('SIGTERM');
      const code = await new Promise<number | null>((resolve) => server!.child.once('exit', resolve));
      expect(code).toBe(0);
      const said = server.output().slice(from);
      expect(said).toMatch(/SIGTERM: draining for 60000 ms/);
      expect(said).toMatch(/Database closed/);
      expect(said).not.toMatch(/"level":(50|60)/);
      await expect(fetch(`${url}/livez`)).rejects.toThrow();
    },
    PROCESSES_TIMEOUT_MS,
  );
});

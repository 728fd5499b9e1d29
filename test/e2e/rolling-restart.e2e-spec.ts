import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { sleep, until } from '../utils/polling';
import { freePort, PROCESSES_TIMEOUT_MS, ServerProcess, startServer } from '../utils/processes';
import { startTestApp } from '../utils/test-app';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';

const ROOT = join(__dirname, '..', '..');
const onPostgres = Boolean(serverUrl());
const hasCaddy = spawnSync('caddy', ['version']).status === 0;
/** What a client tries again by itself (the reference agent's rule): these statuses and a connection that failed. */
const RETRIED = new Set([429, 502, 503, 504]);
/** Caddy checks /healthz every second (docker/Caddyfile): a drain of 3 s is seen well before the listener closes. */
const DRAIN_MS = '3000';

interface Tally {
  sent: number;
  retried: number;
  failed: string[];
}

/**
 * The bundled proxy configuration (docker/Caddyfile), pointed at two instances here: the same health checks, retries
 * and flushing, only the addresses changed, and Caddy's admin endpoint and certificate storage kept out of the way.
 */
async function startCaddy(dir: string, listen: number, upstreams: number[]): Promise<ChildProcess> {
  const bundled = await readFile(join(ROOT, 'docker', 'Caddyfile'), 'utf8');
  const config = bundled
    .replace(/^:3000 \{/m, `:${listen} {`)
    .replace(/reverse_proxy app-1:3000 app-2:3000/, `reverse_proxy ${upstreams.map((port) => `127.0.0.1:${port}`).join(' ')}`);
  if (config === bundled || !config.includes(`127.0.0.1:${upstreams[1]}`)) throw new Error('docker/Caddyfile no longer has the addresses this test replaces');
  const file = join(dir, 'Caddyfile');
  await writeFile(file, `{\n\tadmin off\n\tauto_https off\n}\n\n${config}`);
  const caddy = spawn('caddy', ['run', '--config', file, '--adapter', 'caddyfile'], {
    env: { PATH: process.env.PATH, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    stdio: 'ignore',
  });
  await until(
    async () => (await fetch(`http://127.0.0.1:${listen}/healthz`).catch(() => undefined))?.status,
    (status) => status === 200,
    'Caddy to proxy',
    30_000,
  );
  return caddy;
}

/**
 * Two instances on one PostgreSQL behind the bundled proxy, restarted one after the other (SIGTERM: drain, stop,
 * start again on the same address) while clients add messages with Idempotency-Key, an agent long-polls for work and
 * an event stream follows the organization. Every request a client would not retry by itself must succeed, and every
 * acknowledged message must be stored once and streamed once, in order, with no gap.
 */
// Without Caddy it is skipped, except in CI (CI=true), which installs it: there it fails instead.
(onPostgres && (hasCaddy || process.env.CI) ? describe : describe.skip)('A rolling restart behind the bundled proxy (PostgreSQL, real processes)', () => {
  let database: TestDatabase;
  let owner: TestUser;
  let dir: string;
  let caddy: ChildProcess | undefined;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    const seed = await startTestApp({}, database);
    owner = await createUser(seed, Role.Owner);
    await seed.app.close();
    dir = await mkdtemp(join(tmpdir(), 'rolling-restart-'));
  }, PROCESSES_TIMEOUT_MS);

  afterAll(async () => {
    caddy?.kill('SIGKILL');
    for (const server of servers) await server.stop();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it(
    'fails no request a client would not retry, and every acknowledged message is there once, streamed once, without a gap',
    async () => {
      const ports = [await freePort(), await freePort()];
      const env = (port: number) => ({
        ...database.env,
        PORT: String(port),
        SHUTDOWN_DRAIN_MS: DRAIN_MS,
        RATE_LIMIT_CREDENTIAL_PER_MINUTE: '100000',
        RATE_LIMIT_ORGANIZATION_PER_MINUTE: '100000',
      });
      servers.push(...(await Promise.all(ports.map((port) => startServer([], env(port))))));
      const everyServer = [...servers];
      const proxyPort = await freePort();
      caddy = await startCaddy(dir, proxyPort, ports);
      const url = `http://127.0.0.1:${proxyPort}`;
      const headers = { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json' };

      const tally: Tally = { sent: 0, retried: 0, failed: [] };
      /** One call as the reference agent makes it: a retryable answer or a failed connection is tried again, same key. */
      const call = async (path: string, init: RequestInit = {}): Promise<Response> => {
        for (let attempt = 0; ; attempt++) {
          init.signal?.throwIfAborted();
          tally.sent++;
          const res = await fetch(`${url}${path}`, { ...init, headers: { ...headers, ...init.headers } }).catch(() => undefined);
          if (res && !RETRIED.has(res.status)) {
            if (!res.ok) tally.failed.push(`${init.method ?? 'GET'} ${path}: ${res.status} ${await res.text()}`);
            return res;
          }
          await res?.body?.cancel();
          tally.retried++;
          if (attempt === 50) throw new Error(`${path} still refused after 50 tries`);
          await sleep(Math.min(Number(res?.headers.get('retry-after') ?? 0) * 1000 || 200, 1000));
        }
      };

      const created = await call('/api/v0/sessions', { method: 'POST', body: JSON.stringify({ title: 'rolling restart' }) });
      const { sessionId } = (await created.json()) as { sessionId: string };
      const computer = await call('/api/v0/computers', {
        method: 'POST',
        body: JSON.stringify({ name: 'poller', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' }),
      });
      const { agentToken } = (await computer.json()) as { agentToken: string };

      // The organization's event stream, resumed from its last id whenever it ends (a drain answers it with a retry).
      const streamed: Array<{ seq: number; type: string; messageId?: string }> = [];
      let streams = 0;
      const streamDone = new AbortController();
      const follow = (async () => {
        let lastId: string | undefined;
        while (!streamDone.signal.aborted) {
          let buffer = '';
          try {
            const headers = { accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) };
            // From the log's start the first time (nothing before the test's own events is missed), then from the last id.
            const res = await call(lastId ? '/api/v0/events' : '/api/v0/events?after=0', { headers, signal: streamDone.signal });
            streams++;
            for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
              buffer += Buffer.from(chunk).toString('utf8');
              let end: number;
              while ((end = buffer.indexOf('\n\n')) >= 0) {
                const block = buffer.slice(0, end);
                buffer = buffer.slice(end + 2);
                const id = /^id: (\d+)$/m.exec(block)?.[1];
                const data = /^data: (.*)$/m.exec(block)?.[1];
                if (!id || !data) continue;
                const event = JSON.parse(data) as { seq: number; type: string; data: { messageId?: string } };
                streamed.push({ seq: event.seq, type: event.type, messageId: event.data.messageId });
                lastId = id;
              }
            }
          } catch {
            // The connection went with its instance (or the test is done): resume from the last id.
          }
        }
      })();

      let stopping = false;
      // An agent waiting for work it will not get (its computer has none): each long poll ends empty, and it asks again.
      let polls = 0;
      const agent = (async () => {
        while (!stopping) {
          const res = await call('/api/v0/agent/claims', {
            method: 'POST',
            headers: { authorization: `Bearer ${agentToken}` },
            body: JSON.stringify({ waitMs: 2_000 }),
          });
          polls++;
          expect(await res.json()).toEqual({ work: null });
        }
      })();

      const acknowledged: string[] = [];
      const writers = Array.from({ length: 4 }, async (_, writer) => {
        for (let n = 0; !stopping; n++) {
          const res = await call(`/api/v0/sessions/${sessionId}/messages`, {
            method: 'POST',
            headers: { 'idempotency-key': `writer-${writer}-${n}` },
            body: JSON.stringify({ text: `writer ${writer} message ${n}` }),
          });
          if (res.ok) acknowledged.push(((await res.json()) as { messageId: string }).messageId);
          await sleep(20);
        }
      });

      const messageCount = async () => ((await (await call(`/api/v0/sessions/${sessionId}`)).json()) as { messageCount: number }).messageCount;
      await until(
        () => acknowledged.length,
        (n) => n >= 20,
        'messages before the restart',
        60_000,
      );
      const before = { acknowledged: acknowledged.length, stored: await messageCount() };

      // One after the other: the instance drains (Caddy sees /healthz 503 and sends elsewhere), stops, starts again.
      const exits: Array<number | null> = [];
      for (const index of [0, 1]) {
        const during = acknowledged.length;
        exits.push(await servers[index].stop());
        servers[index] = await startServer([], env(ports[index]));
        everyServer.push(servers[index]);
        // Caddy's health checks (every second) put it back in the rotation: the other goes only once they have.
        await sleep(2_500);
        await until(
          () => acknowledged.length,
          (n) => n >= during + 10,
          `messages after restarting instance ${index + 1}`,
          60_000,
        );
      }
      stopping = true;
      await Promise.all([...writers, agent]);
      // The last acknowledged messages reach the stream too; then it is closed.
      await until(
        () => new Set(streamed.map((event) => event.messageId)),
        (seen) => acknowledged.every((id) => seen.has(id)),
        'every acknowledged message on the stream',
        30_000,
      );
      streamDone.abort();
      await follow;

      const after = { acknowledged: acknowledged.length, stored: await messageCount() };
      console.info(
        `rolling restart: ${tally.sent} requests sent, ${tally.failed.length} failed, ${tally.retried} retried; ` +
          `messages before ${before.acknowledged} acknowledged / ${before.stored} stored, after ${after.acknowledged} / ${after.stored}; ` +
          `${polls} long polls, ${streams} event streams`,
      );

      expect(exits).toEqual([0, 0]);
      expect(tally.failed).toEqual([]);
      // Every acknowledged message stored once: none lost, none doubled by a retried write.
      expect(new Set(acknowledged).size).toBe(acknowledged.length);
      expect(after.stored).toBe(acknowledged.length);
      // The stream resumed across both restarts: every event once, in order, no gap, each acknowledged message in it.
      expect(streams).toBeGreaterThanOrEqual(3);
      const seqs = streamed.map((event) => event.seq);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => seqs[0] + i));
      const streamedMessages = streamed.filter((event) => event.type === 'message.added').map((event) => event.messageId);
      expect(new Set(streamedMessages).size).toBe(streamedMessages.length);
      expect(new Set(streamedMessages)).toEqual(new Set(acknowledged));
      // A normal stop logs nothing at error level, on any of the four processes.
      for (const server of everyServer)
        expect(
          server
            .output()
            .split('\n')
            .filter((line) => /"level":(50|60)/.test(line)),
        ).toEqual([]);
    },
    PROCESSES_TIMEOUT_MS,
  );
});

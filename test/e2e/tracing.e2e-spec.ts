import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { until } from '../utils/polling';
import { ServerProcess, startServer } from '../utils/processes';
import { createTestDatabase, TestDatabase } from '../utils/test-database';
import { startTestApp } from '../utils/test-app';

/** A span as OTLP/HTTP's JSON carries it, with its attributes made a plain object. */
interface ExportedSpan {
  scope: string;
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
}

const SERVER = 2;
const CLIENT = 3;

/** A stand-in for an OpenTelemetry collector: OTLP over HTTP, JSON, every body kept as it came. */
async function startCollector(): Promise<{ url: string; bodies: string[]; spans(): ExportedSpan[]; close(): Promise<void> }> {
  const bodies: string[] = [];
  const server: Server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces') bodies.push(body);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const spans = () =>
    bodies.flatMap((body) =>
      (
        JSON.parse(body) as {
          resourceSpans: Array<{
            scopeSpans: Array<{
              scope: { name: string };
              spans: Array<Omit<ExportedSpan, 'scope' | 'attributes'> & { attributes?: Array<{ key: string; value: Record<string, unknown> }> }>;
            }>;
          }>;
        }
      ).resourceSpans.flatMap((resource) =>
        resource.scopeSpans.flatMap((scope) =>
          scope.spans.map((span) => ({
            ...span,
            scope: scope.scope.name,
            attributes: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]])),
          })),
        ),
      ),
    );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Traces, from the real server process to a collector on this machine: a request is a server span named by its
 * route's pattern, with its database queries under it; each background job run is a trace of its own. What reaches
 * the collector says no more than the access log: no query string, no credential, no query parameter.
 */
describe('OpenTelemetry traces', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let database: TestDatabase;
  let server: ServerProcess;
  let owner: TestUser;

  beforeAll(async () => {
    collector = await startCollector();
    database = await createTestDatabase();
    const setup = await startTestApp({}, database);
    owner = await createUser(setup, Role.Owner);
    await setup.close();
    server = await startServer([], {
      ...database.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_SERVICE_NAME: 'agent-platform-test',
    });
  });

  afterAll(async () => {
    await server?.stop();
    await collector?.close();
    await database?.drop();
  });

  const get = (path: string, headers: Record<string, string> = owner.auth) => fetch(`${server.url}${path}`, { headers });

  it('a request is a server span named by its route, and its queries are spans under it', async () => {
    const missing = randomUUID();
    expect((await get(`/api/v0/sessions/${missing}`)).status).toBe(404);
    const span = await until(
      () => collector.spans().find((s) => s.kind === SERVER && s.attributes['http.route'] === '/api/v0/sessions/:sessionId'),
      Boolean,
      'the request to be exported',
    );
    expect(span).toMatchObject({ name: 'GET /api/v0/sessions/:sessionId', attributes: { 'http.request.method': 'GET', 'http.response.status_code': 404 } });
    // Every span of the trace hangs from the server span: Fastify's request and handler, the queries (the spans come in
    // batches: wait until none is missing its parent).
    const whole = (found: ExportedSpan[]) => found.every((s) => s.spanId === span!.spanId || found.some((parent) => parent.spanId === s.parentSpanId));
    const spans = await until(
      () => collector.spans().filter((s) => s.traceId === span!.traceId),
      (found) => found.some((s) => s.kind === CLIENT && s.attributes['db.system.name'] === 'postgresql') && whole(found),
      'the queries of the request to be exported, each under its parent',
    );
    expect(spans.filter((s) => s.scope === '@fastify/otel').map((s) => s.name)).toEqual(
      expect.arrayContaining(['request', 'handler - SessionsController.get']),
    );
    expect(spans.filter((s) => s.kind === CLIENT).map((s) => s.attributes['db.postgresql.plan'])).toContain('sessions.find');
  });

  it('each background job run is a trace of its own', async () => {
    const job = await until(() => collector.spans().find((s) => s.name === 'job analytics.rollup'), Boolean, 'the rollup run at start to be exported');
    expect(job).toMatchObject({ kind: 1, attributes: { 'job.name': 'analytics.rollup' } });
    expect(job!.parentSpanId ?? '').toBe('');
  });

  it('sends no query string, credential or query parameter to the collector, and no span of the probes', async () => {
    const marker = `probe-${randomUUID()}`;
    // A query string (400: not a parameter of the route), a key that does not exist, the probes.
    expect((await get(`/api/v0/sessions?secret=${marker}`)).status).toBe(400);
    const wrongKey = `apk_${randomUUID().replaceAll('-', '')}`;
    expect((await get('/api/v0/sessions', { Authorization: `Bearer ${wrongKey}` })).status).toBe(401);
    expect((await get('/healthz')).status).toBe(200);
    expect((await get('/livez')).status).toBe(200);
    // A session whose title goes to the database as a query parameter.
    const title = `title-${randomUUID()}`;
    const made = await fetch(`${server.url}/api/v0/sessions`, {
      method: 'POST',
      headers: { ...owner.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ title }),
    });
    expect(made.status).toBe(201);
    await until(
      () => collector.spans().filter((s) => s.kind === SERVER && s.attributes['http.route'] === '/api/v0/sessions'),
      (found) => found.length >= 3,
      'the three requests to /api/v0/sessions to be exported',
    );
    const exported = collector.bodies.join('\n');
    for (const secret of [marker, wrongKey, owner.key, title]) expect(exported).not.toContain(secret);
    expect(collector.spans().filter((s) => /^\/(healthz|livez)/.test(String(s.attributes['url.path'])))).toEqual([]);
  });
});

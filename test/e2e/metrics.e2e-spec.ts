import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Role } from '../../src/modules/auth';
import { DurableListeners } from '../../src/platform/events';
import { createUser } from '../utils/factories';
import { until } from '../utils/polling';
import { openClaim } from '../utils/raw-claims';
import { openStream } from '../utils/sse';
import { serverUrl } from '../utils/test-database';
import { startTestApp, TestApp } from '../utils/test-app';
import { poolWithToken, registerWorker } from '../utils/workers';
import { expectV0Error } from '../utils/v0-errors';

const TOKEN = randomBytes(24).toString('base64url');

/** One sample of the exposition: `name{labels} value`. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

/**
 * `/metrics`: Prometheus's text format behind its own token, with what an operator needs to find a slow route, a
 * saturated pool, a late job or a client held back, and nothing that names an organization, a user or a secret.
 */
describe('Metrics', () => {
  let t: TestApp;
  const scrape = async () => {
    const res = await t.http().get('/metrics').set('Authorization', `Bearer ${TOKEN}`);
    expect(res.status).toBe(200);
    return { text: res.text, samples: parse(res.text) };
  };

  beforeAll(async () => {
    t = await startTestApp({ METRICS_TOKEN: TOKEN, RATE_LIMIT_CREDENTIAL_PER_MINUTE: '5', PROVISIONING_CONCURRENCY: '0' });
  });
  afterAll(() => t?.close());

  it('answers only its token: none, another, another scheme or the token in the query string are refused', async () => {
    expectV0Error(await t.http().get('/metrics'), 401, 'missing_credentials');
    expectV0Error(
      await t
        .http()
        .get('/metrics')
        .set('Authorization', `Bearer ${TOKEN.slice(1)}`),
      401,
      'invalid_credentials',
    );
    expectV0Error(await t.http().get('/metrics').set('Authorization', `Bearer ${TOKEN}x`), 401, 'invalid_credentials');
    expectV0Error(await t.http().get('/metrics').set('Authorization', `Basic ${TOKEN}`), 401, 'invalid_credentials');
    // The token in the address (where proxies log it) is not a way in: an undeclared parameter, refused.
    const inQuery = await t.http().get(`/metrics?token=${TOKEN}`);
    expect(inQuery.status).toBe(400);
    expect(inQuery.text).not.toContain('agent_platform_');
    // A member's API key is no key to the metrics.
    const owner = await createUser(t, Role.Owner);
    expectV0Error(await t.http().get('/metrics').set(owner.auth), 401, 'invalid_credentials');

    const res = await t.http().get('/metrics').set('Authorization', `Bearer ${TOKEN}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).toContain('# TYPE agent_platform_http_request_duration_seconds histogram');
    expect(res.text).toContain('# TYPE process_cpu_seconds_total counter');
  });

  it('times requests by route pattern, method and status, never by path: no id, key or email appears', async () => {
    const owner = await createUser(t, Role.Owner);
    const missing = randomUUID();
    for (let i = 0; i < 3; i++) expectV0Error(await t.http().get(`/api/v0/sessions/${missing}`).set(owner.auth), 404, 'session_not_found');
    await t.http().get(`/no/such/${missing}`).set(owner.auth);
    const { text, samples } = await scrape();
    const route = { route: '/api/v0/sessions/:sessionId', method: 'GET', status: '404' };
    expect(valueOf(samples, 'agent_platform_http_request_duration_seconds_count', route)).toBe(3);
    expect(valueOf(samples, 'agent_platform_http_request_duration_seconds_bucket', { ...route, le: '+Inf' })).toBe(3);
    expect(valueOf(samples, 'agent_platform_http_request_duration_seconds_sum', route)).toBeGreaterThan(0);
    expect(
      valueOf(samples, 'agent_platform_http_request_duration_seconds_count', { route: '(unmatched)', method: 'GET', status: '404' }),
    ).toBeGreaterThanOrEqual(1);
    for (const secret of [missing, owner.key, owner.email, owner.organizationId, owner.userId, TOKEN]) expect(text).not.toContain(secret);
  });

  it('counts the requests a rate limit refused, by policy', async () => {
    const member = await createUser(t, Role.Member);
    const before = valueOf((await scrape()).samples, 'agent_platform_rate_limit_rejections_total', { policy: 'credential' }) ?? 0;
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await t.http().get('/api/v0/sessions').set(member.auth)).status);
    expect(statuses.filter((s) => s === 429)).toHaveLength(2);
    expect(valueOf((await scrape()).samples, 'agent_platform_rate_limit_rejections_total', { policy: 'credential' })).toBe(before + 2);
  });

  it("shows the database pool's size and use, and the queries' times", async () => {
    const { samples } = await scrape();
    expect(valueOf(samples, 'agent_platform_db_pool_max_connections')).toBe(serverUrl() ? 5 : 1);
    const busy = valueOf(samples, 'agent_platform_db_pool_connections', { state: 'busy' })!;
    const idle = valueOf(samples, 'agent_platform_db_pool_connections', { state: 'idle' })!;
    expect(busy + idle).toBeGreaterThanOrEqual(1);
    expect(valueOf(samples, 'agent_platform_db_pool_waiting')).toEqual(expect.any(Number));
    const queries = valueOf(samples, 'agent_platform_db_query_duration_seconds_count', { outcome: 'ok' })!;
    // Another request's queries are counted: the count moves.
    const owner = await createUser(t, Role.Owner);
    await t.http().get('/api/v0/sessions').set(owner.auth).expect(200);
    expect(valueOf((await scrape()).samples, 'agent_platform_db_query_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThan(queries);
  });

  it("counts background jobs' runs and says whether one is late", async () => {
    const samples = await until(
      async () => (await scrape()).samples,
      (s) => (valueOf(s, 'agent_platform_job_runs_total', { job_name: 'analytics.rollup', outcome: 'ok' }) ?? 0) >= 1,
      'the rollup job to run at start',
    );
    expect(valueOf(samples, 'agent_platform_job_run_duration_seconds_count', { job_name: 'analytics.rollup' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(samples, 'agent_platform_job_running', { job_name: 'analytics.rollup' })).toBe(0);
    expect(valueOf(samples, 'agent_platform_job_lag_seconds', { job_name: 'analytics.rollup' })).toBe(0);
  });

  it('shows how far behind the log each durable listener is, back to 0 once it has caught up', async () => {
    const owner = await createUser(t, Role.Owner);
    await t.http().post('/api/v0/sessions').set(owner.auth).send({}).expect(201);
    const listeners = t.app.get(DurableListeners);
    await listeners.drain();
    const names = listeners.registered().map((l) => l.name);
    expect(names.length).toBeGreaterThan(0);
    const { samples } = await scrape();
    for (const name of names) expect([name, valueOf(samples, 'agent_platform_event_listener_lag_events', { listener: name })]).toEqual([name, 0]);
  });

  it('shows the long polls and event streams open on this instance, and they go when they end', async () => {
    const owner = await createUser(t, Role.Owner);
    const open = async () => {
      const { samples } = await scrape();
      return { polls: valueOf(samples, 'agent_platform_long_polls_open'), streams: valueOf(samples, 'agent_platform_event_streams_open') };
    };
    expect(await open()).toEqual({ polls: 0, streams: 0 });
    const polls = [openClaim(t, owner.auth, { waitMs: 20_000 }), openClaim(t, owner.auth, { waitMs: 20_000 })];
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const stream = await openStream(`http://127.0.0.1:${port}`, '/api/v0/events', owner.auth);
    expect(stream.status).toBe(200);
    await until(open, (now) => now.polls === 2 && now.streams === 1, 'two polls and a stream to be counted');
    for (const poll of polls) poll.cut();
    stream.close();
    await until(open, (now) => now.polls === 0 && now.streams === 0, 'the polls and the stream to be gone');
  });

  it("shows the provisioning queue: a managed computer's steps wait while no instance provisions", async () => {
    const owner = await createUser(t, Role.Owner);
    const before = valueOf((await scrape()).samples, 'agent_platform_provisioning_steps', { status: 'pending' }) ?? 0;
    const made = await t.http().post('/api/v0/computers').set(owner.auth).send({ name: 'box', provider: 'local' });
    expect(made.status).toBe(201);
    const steps = (made.body.provisioningSteps as unknown[]).length;
    expect(steps).toBeGreaterThan(0);
    const { samples } = await scrape();
    expect(valueOf(samples, 'agent_platform_provisioning_steps', { status: 'pending' })).toBe(before + steps);
    expect(valueOf(samples, 'agent_platform_provisioning_steps', { status: 'running' })).toBe(0);
    expect(valueOf(samples, 'agent_platform_analytics_rollup_pending_days')).toEqual(expect.any(Number));
  });

  it("shows the workers online, the computers placed on workers or waiting for one, and the workers' claims waiting here", async () => {
    const owner = await createUser(t, Role.Owner);
    const fleet = async () => {
      const { samples } = await scrape();
      return {
        online: valueOf(samples, 'agent_platform_workers_online'),
        placed: valueOf(samples, 'agent_platform_worker_computers', { placement: 'placed' }),
        waiting: valueOf(samples, 'agent_platform_worker_computers', { placement: 'waiting' }),
        claims: valueOf(samples, 'agent_platform_worker_claims_open'),
      };
    };
    const before = await fleet();
    const { pool, token } = await poolWithToken(t, owner);
    const waiting = await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: 'gpu', provider: 'local', pool: pool.name, labels: ['gpu'] });
    expect(waiting.status).toBe(201);
    expect(await fleet()).toEqual({ ...before, waiting: before.waiting! + 1 });
    const worker = await registerWorker(t, token, { labels: ['gpu'] });
    await until(fleet, (now) => now.placed === before.placed! + 1 && now.waiting === before.waiting, 'the computer to be placed');
    expect((await fleet()).online).toBe(before.online! + 1);
    const claim = t
      .http()
      .post('/api/v0/worker/claims')
      .set({ Authorization: `Bearer ${worker.session}` })
      .send({ waitMs: 20_000 })
      .then((res) => res);
    // Its step is there to take: the claim answers at once, and nothing is left waiting.
    expect((await claim).body.work).toMatchObject({ computerId: waiting.body.id });
    expect((await fleet()).claims).toBe(before.claims);
    // A claim with nothing to take waits, and is counted while it does.
    const idle = await registerWorker(t, token);
    const waitingClaim = t
      .http()
      .post('/api/v0/worker/claims')
      .set({ Authorization: `Bearer ${idle.session}` })
      .send({ waitMs: 3_000 })
      .then((res) => res);
    await until(fleet, (now) => now.claims === before.claims! + 1, 'the idle claim to be counted');
    expect((await waitingClaim).body).toEqual({ work: null, sync: false });
    expect((await fleet()).claims).toBe(before.claims);
  });

  it('the Grafana dashboard in docker/ asks only for metrics and labels this server serves', async () => {
    const dashboard = JSON.parse(readFileSync(join(__dirname, '..', '..', 'docker', 'grafana-dashboard.json'), 'utf8')) as {
      panels: Array<{ id: number; type: string; title: string; targets?: Array<{ expr: string; datasource: { uid: string } }> }>;
    };
    await scrape(); // so that the requests' histogram has a sample (with its labels) however this test is run
    const { text, samples } = await scrape();
    // Families from their TYPE lines (a counter nothing has touched yet has no sample), a histogram's three series each.
    const families = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
    const served = new Set([...families].flatMap(([name, type]) => (type === 'histogram' ? ['_bucket', '_count', '_sum'].map((s) => name + s) : [name])));
    const labelsOf = (name: string) => new Set(samples.filter((s) => s.name === name).flatMap((s) => Object.keys(s.labels)));

    const queries = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel: panel.title, ...target })));
    expect(queries.length).toBeGreaterThan(15);
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    for (const query of queries) {
      expect({ panel: query.panel, datasource: query.datasource.uid }).toEqual({ panel: query.panel, datasource: '${datasource}' });
      const names = [...query.expr.matchAll(/\b((?:agent_platform|process|nodejs)_\w+)/g)].map((m) => m[1]);
      expect({ panel: query.panel, names: names.length > 0 }).toEqual({ panel: query.panel, names: true });
      for (const name of names) expect({ panel: query.panel, name, served: served.has(name) }).toEqual({ panel: query.panel, name, served: true });
      // Labels are known from samples: a family without any yet (no client has gone early) is not checked.
      if (names.some((name) => labelsOf(name).size === 0 && families.get(name) !== 'gauge')) continue;
      const known = new Set(['le', 'instance', ...names.flatMap((name) => [...labelsOf(name)])]);
      const grouped = [...query.expr.matchAll(/by \(([^)]*)\)/g)].flatMap((m) => m[1].split(',').map((label) => label.trim()));
      const filtered = [...query.expr.matchAll(/(\w+)=~?"/g)].map((m) => m[1]);
      for (const label of [...grouped, ...filtered])
        expect({ panel: query.panel, label, known: known.has(label) }).toEqual({ panel: query.panel, label, known: true });
    }
  });
});

describe('Metrics without METRICS_TOKEN', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  it('answers 404 metrics_disabled to everyone, whatever they send', async () => {
    expectV0Error(await t.http().get('/metrics'), 404, 'metrics_disabled');
    expectV0Error(await t.http().get('/metrics').set('Authorization', 'Bearer '), 404, 'metrics_disabled');
    const owner = await createUser(t, Role.Owner);
    expectV0Error(await t.http().get('/metrics').set(owner.auth), 404, 'metrics_disabled');
  });
});

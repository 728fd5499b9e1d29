import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser } from '../utils/factories';
import { sleep } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';
import { serverUrl } from '../utils/test-database';
import { expectStatus, expectV0Error } from '../utils/v0-errors';
import { poolWithToken, registerWorker, workerRegistration } from '../utils/workers';
import { headOnly, MiB, portOf } from '../utils/fixtures/request-limits';

// Rate limits: per credential, per organization and per client address, behind a proxy, turned off, and across instances.

/** A GET from another local address (the loopback network answers all of 127.0.0.0/8). */
function getFrom(
  localAddress: string,
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, localAddress, headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Starts a test at the beginning of a window when too little of the current one is left for it. */
async function awayFromWindowEdge(neededMs = 12_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < neededMs) await sleep(left + 50);
}

/** `"name";r=1;t=2` → {name, r, t} */
function parseRateLimit(header: unknown): { name: string; r: number; t: number } {
  const match = /^"(\w+)";r=(\d+);t=(\d+)$/.exec(String(header));
  if (!match) throw new Error(`not a RateLimit field: ${String(header)}`);
  return { name: match[1], r: Number(match[2]), t: Number(match[3]) };
}

function expectRateLimited(res: Response, policy: string, limit: number) {
  expectV0Error(res, 429, 'rate_limited');
  expect(res.body.title).toBe('Too Many Requests');
  expect(res.body.metadata).toEqual({ code: 'rate_limited', policy, limit, windowSeconds: 60, retryAfterSeconds: expect.any(Number) });
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(res.body.metadata.retryAfterSeconds).toBe(retryAfter);
  expect(parseRateLimit(res.headers.ratelimit)).toEqual({ name: policy, r: 0, t: expect.any(Number) });
}

/** Security log lines `rate_limit.exceeded`, as logSecurityEvent writes them. */
function securityLines(spy: jest.SpyInstance): Array<Record<string, unknown>> {
  return spy.mock.calls.map((call) => call[0] as Record<string, unknown>).filter((line) => line?.security === 'rate_limit.exceeded');
}

describe('Rate limits', () => {
  afterEach(() => jest.restoreAllMocks());

  describe('per credential and per organization', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await startTestApp({ RATE_LIMIT_CREDENTIAL_PER_MINUTE: '5', RATE_LIMIT_ORGANIZATION_PER_MINUTE: '8', RATE_LIMIT_ANONYMOUS_PER_MINUTE: '0' });
    });

    afterAll(() => t.close());

    it('a key over its limit gets 429 with Retry-After; another key of the organization and another organization go on', async () => {
      await awayFromWindowEdge();
      const org = await createOrganization(t);
      const first = await createUser(t, Role.Member, org);
      const second = await createUser(t, Role.Member, org);
      const outsider = await createUser(t, Role.Member);
      const remaining: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await t.http().get('/api/v0/sessions').set(first.auth);
        expectStatus(res, 200);
        expect(res.headers['ratelimit-policy']).toBe('"credential";q=5;w=60, "organization";q=8;w=60');
        const field = parseRateLimit(res.headers.ratelimit);
        expect(field.name).toBe('credential');
        expect(field.t).toBeGreaterThan(0);
        expect(field.t).toBeLessThanOrEqual(60);
        remaining.push(field.r);
      }
      expect(remaining).toEqual([4, 3, 2, 1, 0]);
      const refused = await t.http().get('/api/v0/sessions').set(first.auth);
      expectRateLimited(refused, 'credential', 5);
      expect(refused.headers['ratelimit-policy']).toBe('"credential";q=5;w=60, "organization";q=8;w=60');
      // Also before a body: the 429 comes on the head of an upload.
      const upload = await headOnly(
        portOf(t),
        `POST /api/v0/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${first.key}\r\nContent-Type: application/json\r\nContent-Length: ${MiB}`,
      );
      expect(upload.status).toBe(429);
      expect(upload.headers.connection).toBe('close');
      // In the analytics flavour on analytics paths.
      const analytics = await t.http().get('/api/v1/analytics/tokens?startDate=2026-01-20&endDate=2026-01-21').set(first.auth);
      expect(analytics.status).toBe(429);
      expect(analytics.body).toEqual({
        title: 'Too Many Requests',
        detail: expect.stringMatching(/credential limit/),
        status: 429,
        requestId: analytics.headers['x-request-id'],
      });
      expect(analytics.headers['retry-after']).toBeDefined();
      // The organization has 8 - 5 left: the second key goes on, then the organization is spent.
      for (let i = 0; i < 3; i++) {
        const res = await t.http().get('/api/v0/sessions').set(second.auth);
        expectStatus(res, 200);
        expect(parseRateLimit(res.headers.ratelimit)).toMatchObject({ name: 'organization', r: 2 - i });
      }
      expectRateLimited(await t.http().get('/api/v0/sessions').set(second.auth), 'organization', 8);
      expectStatus(await t.http().get('/api/v0/sessions').set(outsider.auth), 200);
    });

    it("a credential's refusals stay off its organization's budget", async () => {
      await awayFromWindowEdge();
      const org = await createOrganization(t);
      const noisy = await createUser(t, Role.Member, org);
      const quiet = await createUser(t, Role.Member, org);
      for (let i = 0; i < 5; i++) expectStatus(await t.http().get('/api/v0/sessions').set(noisy.auth), 200);
      for (let i = 0; i < 20; i++) expect((await t.http().get('/api/v0/sessions').set(noisy.auth)).status).toBe(429);
      for (let i = 0; i < 3; i++) expectStatus(await t.http().get('/api/v0/sessions').set(quiet.auth), 200);
    });

    it('a burst over the limit logs rate_limit.exceeded once per client and window', async () => {
      await awayFromWindowEdge();
      const spy = jest.spyOn(Logger.prototype, 'log');
      const user = await createUser(t, Role.Member);
      for (let i = 0; i < 5; i++) expectStatus(await t.http().get('/api/v0/sessions').set(user.auth), 200);
      const burst = await Promise.all(Array.from({ length: 200 }, () => t.http().get('/api/v0/sessions').set(user.auth)));
      expect(burst.every((r) => r.status === 429)).toBe(true);
      const lines = securityLines(spy);
      expect(lines).toEqual([
        expect.objectContaining({ organizationId: user.organizationId, userId: user.userId, credentialId: user.apiKeyId, policy: 'credential', limit: 5 }),
      ]);
    });
  });

  describe('per client address without a valid credential', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await startTestApp({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: '4' });
    });

    afterAll(() => t.close());

    it('failed authentication and public routes count; probes and valid credentials do not; another address has its own', async () => {
      await awayFromWindowEdge();
      const spy = jest.spyOn(Logger.prototype, 'log');
      const user = await createUser(t, Role.Member);
      for (let i = 0; i < 10; i++) {
        const probe = await t.http().get('/healthz');
        expectStatus(probe, 200);
        expect(probe.headers.ratelimit).toBeUndefined();
      }
      const first = await t.http().get('/api/v0/sessions');
      expectV0Error(first, 401, 'missing_credentials');
      expect(first.headers['ratelimit-policy']).toBe('"anonymous";q=4;w=60');
      expect(parseRateLimit(first.headers.ratelimit)).toMatchObject({ name: 'anonymous', r: 3 });
      expectStatus(await t.http().get('/api/v0/sessions').set('Authorization', 'Bearer apk_nope'), 401);
      expectStatus(await t.http().get('/docs-json'), 200);
      expectV0Error(await t.http().get('/no/such/route'), 404, 'route_not_found');
      expectRateLimited(await t.http().get('/api/v0/sessions'), 'anonymous', 4);
      expectRateLimited(await t.http().get('/docs-json'), 'anonymous', 4);
      // A public operation of the API counts too, as its document's 429 says.
      expectRateLimited(await t.http().get('/api/v0/setup'), 'anonymous', 4);
      for (let i = 0; i < 20; i++) expect((await t.http().get('/api/v0/sessions').set('Authorization', 'Bearer apk_guess')).status).toBe(429);
      expectStatus(await t.http().get('/healthz'), 200);
      const valid = await t.http().get('/api/v0/sessions').set(user.auth);
      expectStatus(valid, 200);
      expect(valid.headers.ratelimit).toBeUndefined();
      const elsewhere = await getFrom('127.0.0.2', portOf(t), '/api/v0/sessions');
      expect(elsewhere.status).toBe(401);
      expect(parseRateLimit(elsewhere.headers.ratelimit)).toMatchObject({ name: 'anonymous', r: 3 });
      expect(securityLines(spy)).toEqual([expect.objectContaining({ ip: '127.0.0.1', policy: 'anonymous', limit: 4 })]);
    });
  });

  describe('per worker on the worker channel', () => {
    let t: TestApp;

    beforeAll(async () => {
      // AUTH_CACHE_MS 0: a session that ended is no longer its worker's at once (else within the cache's lifetime).
      t = await startTestApp({
        WORKER_RATE_LIMIT_PER_MINUTE: '5',
        RATE_LIMIT_ORGANIZATION_PER_MINUTE: '10',
        RATE_LIMIT_ANONYMOUS_PER_MINUTE: '6',
        AUTH_CACHE_MS: '0',
      });
    });

    afterAll(() => t.close());

    const worker = (path: string, token: string, body: object = {}) =>
      t.http().post(`/api/v0/worker/${path}`).set('Authorization', `Bearer ${token}`).send(body);
    const guessedSession = () => `wks_${randomBytes(32).toString('base64url')}`;

    it("a worker over its limit gets 429 with Retry-After; another worker at the same address and the organization's people go on", async () => {
      await awayFromWindowEdge();
      const spy = jest.spyOn(Logger.prototype, 'log');
      const owner = await createUser(t, Role.Owner);
      const { token } = await poolWithToken(t, owner);
      const noisy = await registerWorker(t, token);
      const quiet = await registerWorker(t, token);
      const remaining: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await worker('heartbeat', noisy.session);
        expectStatus(res, 200);
        expect(res.headers['ratelimit-policy']).toBe('"worker";q=5;w=60');
        remaining.push(parseRateLimit(res.headers.ratelimit).r);
      }
      expect(remaining).toEqual([4, 3, 2, 1, 0]);
      expectRateLimited(await worker('heartbeat', noisy.session), 'worker', 5);
      // Every route of the channel counts against it.
      expectRateLimited(await worker('claims', noisy.session, { waitMs: 0 }), 'worker', 5);

      const other = await worker('heartbeat', quiet.session);
      expectStatus(other, 200);
      expect(parseRateLimit(other.headers.ratelimit)).toMatchObject({ name: 'worker', r: 4 });
      // The workers spent none of the organization's 10: its two requests for the pool and the token did.
      const people = await t.http().get('/api/v0/sessions').set(owner.auth);
      expectStatus(people, 200);
      expect(parseRateLimit(people.headers.ratelimit)).toMatchObject({ name: 'organization', r: 7 });
      expect(securityLines(spy)).toEqual([
        expect.objectContaining({ organizationId: owner.organizationId, credentialId: `worker:${noisy.id}`, policy: 'worker', limit: 5 }),
      ]);
    });

    it("guessed and ended sessions, enrollment tokens and registration spend the address's anonymous budget, never a worker's", async () => {
      await awayFromWindowEdge();
      const owner = await createUser(t, Role.Owner);
      const { token } = await poolWithToken(t, owner);
      const live = await registerWorker(t, token);
      const leaving = await registerWorker(t, token);
      expectStatus(await worker('leave', leaving.session), 204);

      // Each of these is 401, counted against 127.0.0.1 until its budget is spent; none may open a budget of its own.
      const attempts = [() => worker('heartbeat', guessedSession()), () => worker('heartbeat', leaving.session), () => worker('claims', token)];
      let refused: Response | undefined;
      for (let i = 0; i < 7 && !refused; i++) {
        const res = await attempts[i % attempts.length]();
        if (res.status === 429) refused = res;
        else {
          expectV0Error(res, 401, 'invalid_worker_token');
          expect(parseRateLimit(res.headers.ratelimit).name).toBe('anonymous');
        }
      }
      expectRateLimited(refused!, 'anonymous', 6);
      expectRateLimited(await worker('register', token, workerRegistration()), 'anonymous', 6);
      expectRateLimited(await worker('heartbeat', guessedSession()), 'anonymous', 6);

      // The live worker keeps its own budget at the same address.
      const res = await worker('heartbeat', live.session);
      expectStatus(res, 200);
      expect(parseRateLimit(res.headers.ratelimit)).toMatchObject({ name: 'worker', r: 4 });
    });
  });

  describe('behind a reverse proxy (TRUST_PROXY)', () => {
    const spoofed = (t: TestApp, forwardedFor: string) => t.http().get('/api/v0/sessions').set('X-Forwarded-For', forwardedFor);

    it('without it, X-Forwarded-For is ignored: a client cannot name itself another address to escape its limit', async () => {
      const t = await startTestApp({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: '2' });
      try {
        await awayFromWindowEdge();
        expectStatus(await spoofed(t, '203.0.113.1'), 401);
        expectStatus(await spoofed(t, '203.0.113.2'), 401);
        expectRateLimited(await spoofed(t, '203.0.113.3'), 'anonymous', 2);
      } finally {
        await t.close();
      }
    });

    it('with the proxy’s address trusted, each client behind it has its own anonymous budget', async () => {
      const t = await startTestApp({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: '2', TRUST_PROXY: '127.0.0.1' });
      try {
        await awayFromWindowEdge();
        expectStatus(await spoofed(t, '203.0.113.1'), 401);
        expectStatus(await spoofed(t, '203.0.113.1'), 401);
        expectRateLimited(await spoofed(t, '203.0.113.1'), 'anonymous', 2);
        const other = await spoofed(t, '203.0.113.2');
        expectStatus(other, 401);
        expect(parseRateLimit(other.headers.ratelimit)).toMatchObject({ name: 'anonymous', r: 1 });
      } finally {
        await t.close();
      }
    });
  });

  describe('0 turns a limit off', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await startTestApp({ RATE_LIMIT_CREDENTIAL_PER_MINUTE: '0', RATE_LIMIT_ORGANIZATION_PER_MINUTE: '0', RATE_LIMIT_ANONYMOUS_PER_MINUTE: '0' });
    });

    afterAll(() => t.close());

    it('no 429 and no RateLimit headers', async () => {
      const user = await createUser(t, Role.Member);
      const responses = await Promise.all(
        Array.from({ length: 60 }, (_, i) => (i % 2 ? t.http().get('/api/v0/sessions').set(user.auth) : t.http().get('/api/v0/sessions'))),
      );
      expect(responses.map((r) => r.status).sort()).toEqual([...Array(30).fill(200), ...Array(30).fill(401)]);
      for (const res of responses) {
        expect(res.headers['ratelimit-policy']).toBeUndefined();
        expect(res.headers.ratelimit).toBeUndefined();
      }
    });

    it('the organization limit alone applies when the credential limit is off', async () => {
      const only = await startTestApp({ RATE_LIMIT_CREDENTIAL_PER_MINUTE: '0', RATE_LIMIT_ORGANIZATION_PER_MINUTE: '3' });
      try {
        await awayFromWindowEdge();
        const user = await createUser(only, Role.Member);
        const res = await only.http().get('/api/v0/sessions').set(user.auth);
        expect(res.headers['ratelimit-policy']).toBe('"organization";q=3;w=60');
        await only.http().get('/api/v0/sessions').set(user.auth);
        await only.http().get('/api/v0/sessions').set(user.auth);
        expectRateLimited(await only.http().get('/api/v0/sessions').set(user.auth), 'organization', 3);
      } finally {
        await only.close();
      }
    });
  });
});

(serverUrl() ? describe : describe.skip)('Rate limits across instances on one PostgreSQL', () => {
  let a: TestApp;
  let b: TestApp;
  const LIMIT = 100;

  beforeAll(async () => {
    const env = { RATE_LIMIT_CREDENTIAL_PER_MINUTE: String(LIMIT), RATE_LIMIT_ORGANIZATION_PER_MINUTE: '0', RATE_LIMIT_ANONYMOUS_PER_MINUTE: '0' };
    a = await startTestApp(env);
    b = await startTestApp(env, a.database);
  });

  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it('a client alternating between two instances gets the configured rate in all, not twice it', async () => {
    await awayFromWindowEdge(20_000);
    const user = await createUser(a, Role.Member);
    let accepted = 0;
    for (let i = 0; i < 3 * LIMIT; i++) {
      const res = await (i % 2 ? b : a).http().get('/api/v0/sessions').set(user.auth);
      expect([200, 429]).toContain(res.status);
      if (res.status === 200) accepted++;
    }
    expect(accepted).toBeGreaterThanOrEqual(LIMIT * 0.9);
    expect(accepted).toBeLessThanOrEqual(LIMIT);
    for (const app of [a, b]) expectRateLimited(await app.http().get('/api/v0/sessions').set(user.auth), 'credential', LIMIT);
    const rows = (await a.app.get(DataSource).query(`SELECT used FROM rate_limit_windows WHERE key = $1`, [`credential:${user.apiKeyId}`])) as Array<{
      used: number;
    }>;
    expect(rows).toHaveLength(1);
    expect(rows[0].used).toBeGreaterThanOrEqual(LIMIT);
  });

  it('concurrent bursts on both instances never pass the limit in all', async () => {
    await awayFromWindowEdge(20_000);
    const user = await createUser(a, Role.Member);
    const burst = await Promise.all(Array.from({ length: 2 * LIMIT }, (_, i) => (i % 2 ? b : a).http().get('/api/v0/sessions').set(user.auth)));
    const accepted = burst.filter((r) => r.status === 200).length;
    expect(accepted).toBeGreaterThanOrEqual(LIMIT * 0.9);
    expect(accepted).toBeLessThanOrEqual(LIMIT);
  });
});

import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { ENDED_EARLY_MS } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectStatus, expectV0Error } from '../utils/v0-errors';
import { headOnly, MiB, portOf } from '../utils/fixtures/request-limits';

// Request bodies: refused on the credential before they are read, then held to each route's size limit and to a nesting depth.

describe('The credential is checked before the body is read', () => {
  let t: TestApp;
  let user: TestUser;
  const path = () => `/api/v0/sessions/${randomUUID()}/messages`;

  beforeAll(async () => {
    t = await startTestApp();
    user = await createUser(t, Role.Member);
  });

  afterAll(() => t.close());

  it('a 32 MiB upload without a key is refused 401 on its headers alone, and the connection closed', async () => {
    const res = await headOnly(portOf(t), `POST ${path()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${32 * MiB}`);
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body)).toMatchObject({ status: 401, metadata: { code: 'missing_credentials' } });
    expect(res.headers.connection).toBe('close');
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });

  it('100 such uploads at once, with a wrong key, each get their 401 at once; none of the bodies is read', async () => {
    const started = Date.now();
    const all = await Promise.all(
      Array.from({ length: 100 }, () =>
        headOnly(
          portOf(t),
          `POST ${path()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer apk_${'0'.repeat(40)}\r\nContent-Type: application/json\r\nContent-Length: ${32 * MiB}`,
          '{"text":"' + 'x'.repeat(16 * 1024),
        ),
      ),
    );
    expect(all.map((r) => r.status)).toEqual(Array(100).fill(401));
    expect(all.every((r) => JSON.parse(r.body).metadata.code === 'invalid_credentials' || JSON.parse(r.body).metadata.code === 'malformed_credentials')).toBe(
      true,
    );
    // At once: a server reading the bodies would wait for the rest until REQUEST_TIMEOUT_MS (2 minutes) and answer 408.
    expect(Date.now() - started).toBeLessThan(ENDED_EARLY_MS);
  });

  it('a chunked upload without a key is refused the same way', async () => {
    const res = await headOnly(portOf(t), `POST ${path()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked`, '4000\r\n');
    expect(res.status).toBe(401);
    expect(res.headers.connection).toBe('close');
  });

  it("with a valid key, an announced body over the route's limit is refused 413 before it is sent", async () => {
    const res = await headOnly(
      portOf(t),
      `POST ${path()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.key}\r\nContent-Type: application/json\r\nContent-Length: ${33 * MiB}`,
    );
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({ metadata: { code: 'payload_too_large', limitBytes: 32 * MiB } });
  });

  it('public routes stay public, unknown routes answer 404, roles are still checked after the body', async () => {
    expectStatus(await t.http().get('/healthz'), 200);
    expectStatus(await t.http().get('/docs'), 200);
    expectStatus(await t.http().get('/docs-json'), 200);
    expectStatus(await t.http().get('/docs-yaml'), 200);
    expectV0Error(await t.http().get('/nothing/here'), 404, 'route_not_found');
    expectV0Error(await t.http().post('/nothing/here').send({ a: 1 }), 404, 'route_not_found');
    expectV0Error(await t.http().get('/api/v0/sessions'), 401, 'missing_credentials');
    expectV0Error(await t.http().get('/api/v0/sessions').set('Authorization', 'Basic abc'), 401, 'malformed_credentials');
    const guest = await createUser(t, Role.Guest);
    expectV0Error(await t.http().post('/api/v0/sessions').set(guest.auth).send({}), 403, 'insufficient_role');
    expectStatus(await t.http().get('/api/v0/sessions').set(user.auth), 200);
  });
});

describe('Body limits per route', () => {
  let t: TestApp;
  let owner: TestUser;
  let sessionId: string;

  beforeAll(async () => {
    t = await startTestApp({ BODY_LIMIT_BYTES: '4096', MESSAGE_BODY_LIMIT_BYTES: '65536' });
    owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    sessionId = (await t.http().post('/api/v0/sessions').set(owner.auth).send({})).body.sessionId as string;
  });

  afterAll(() => t.close());

  const tooLarge = (res: Response, limitBytes: number) => {
    expectV0Error(res, 413, 'payload_too_large');
    expect(res.body.metadata).toEqual({ code: 'payload_too_large', limitBytes });
    expect(res.body.detail).toContain(String(limitBytes));
  };

  it('add-message takes MESSAGE_BODY_LIMIT_BYTES', async () => {
    expectStatus(
      await t
        .http()
        .post(`/api/v0/sessions/${sessionId}/messages`)
        .set(owner.auth)
        .send({ text: 'x'.repeat(60_000) }),
      200,
    );
    tooLarge(
      await t
        .http()
        .post(`/api/v0/sessions/${sessionId}/messages`)
        .set(owner.auth)
        .send({ text: 'x'.repeat(66_000) }),
      65536,
    );
  });

  it('every other route takes BODY_LIMIT_BYTES', async () => {
    tooLarge(
      await t
        .http()
        .post('/api/v0/sessions')
        .set(owner.auth)
        .send({ title: 'x'.repeat(5000) }),
      4096,
    );
    tooLarge(
      await t
        .http()
        .patch(`/api/v0/sessions/${sessionId}`)
        .set(owner.auth)
        .send({ title: 'x'.repeat(5000) }),
      4096,
    );
    tooLarge(
      await t
        .http()
        .post('/settings/api-keys')
        .set(owner.auth)
        .send({ name: 'x'.repeat(5000) }),
      4096,
    );
    const patch = JSON.stringify({ settings: { serviceRouterGuidance: 'x'.repeat(5000) } });
    tooLarge(
      await t.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).set('content-type', 'application/merge-patch+json').send(patch),
      4096,
    );
    const analytics = await t
      .http()
      .post('/api/v1/analytics/rollup')
      .set(owner.auth)
      .send({ x: 'x'.repeat(5000) });
    expect(analytics.status).toBe(413);
    expect(Object.keys(analytics.body).sort()).toEqual(['detail', 'requestId', 'status', 'title']);
  });

  it("the agent channel's message append and the custom-model relay take MESSAGE_BODY_LIMIT_BYTES", async () => {
    const big = { messages: [{ role: 'assistant', content: [{ type: 'text', text: 'x'.repeat(20_000) }] }] };
    const append = await t.http().post(`/api/v0/agent/sessions/${sessionId}/messages`).set(owner.auth).send(big);
    expect(append.status).not.toBe(413);
    expect(append.status).toBeLessThan(500);
    tooLarge(
      await t
        .http()
        .post(`/api/v0/agent/sessions/${sessionId}/messages`)
        .set(owner.auth)
        .send({ messages: [{ role: 'assistant', content: [{ type: 'text', text: 'x'.repeat(70_000) }] }] }),
      65536,
    );
    const relay = await t
      .http()
      .post('/api/v0/agent/models/none/chat/completions')
      .set(owner.auth)
      .send({ messages: [{ role: 'user', content: 'x'.repeat(20_000) }] });
    expect(relay.status).not.toBe(413);
    expect(relay.status).toBeLessThan(500);
    tooLarge(
      await t
        .http()
        .post('/api/v0/agent/models/none/chat/completions')
        .set(owner.auth)
        .send({ messages: [{ role: 'user', content: 'x'.repeat(70_000) }] }),
      65536,
    );
  });
});

describe('JSON nesting depth', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startTestApp({ JSON_MAX_DEPTH: '16' });
    owner = await createUser(t, Role.Owner);
  });

  afterAll(() => t.close());

  const nested = (levels: number) => `{"title":"t","sessionSettings":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;

  it('a body nested deeper than JSON_MAX_DEPTH answers 400 json_too_deep; at the limit it is parsed', async () => {
    const deep = await t.http().post('/api/v0/sessions').set(owner.auth).set('content-type', 'application/json').send(nested(17));
    expectV0Error(deep, 400, 'json_too_deep');
    expect(deep.body.metadata).toEqual({ code: 'json_too_deep', maxDepth: 16 });
    expect(deep.body.detail).toMatch(/16 levels/);
    const atLimit = await t.http().post('/api/v0/sessions').set(owner.auth).set('content-type', 'application/json').send(nested(16));
    expectV0Error(atLimit, 400, 'validation_failed');
  });

  it('brackets inside strings do not count', async () => {
    const res = await t
      .http()
      .post('/api/v0/sessions')
      .set(owner.auth)
      .send({ title: '[{'.repeat(20) });
    expectStatus(res, 201);
  });

  it('applies to merge patches and to analytics bodies (in their flavour), and a million levels cost nothing', async () => {
    const patch = `{"settings":{"extraKnownMarketplaces":${'{"a":'.repeat(20)}1${'}'.repeat(20)}}}`;
    expectV0Error(
      await t.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).set('content-type', 'application/merge-patch+json').send(patch),
      400,
      'json_too_deep',
    );
    const analytics = await t.http().post('/api/v1/analytics/rollup').set(owner.auth).set('content-type', 'application/json').send('['.repeat(100));
    expect(analytics.status).toBe(400);
    expect(Object.keys(analytics.body).sort()).toEqual(['detail', 'requestId', 'status', 'title']);
    // The app runs in this process: the CPU time spent around the request is the request's cost, sending a megabyte
    // included (about 10 ms), which a busy machine does not inflate as it does the wall-clock time.
    const cpuBefore = process.cpuUsage();
    const huge = await t.http().post('/api/v0/sessions').set(owner.auth).set('content-type', 'application/json').send('['.repeat(1_000_000));
    const cpu = process.cpuUsage(cpuBefore);
    expectV0Error(huge, 400, 'json_too_deep');
    expect((cpu.user + cpu.system) / 1000).toBeLessThan(2000);
  });
});

describe('Bodies built to make parsing or validation expensive', () => {
  let t: TestApp;
  let owner: TestUser;
  /** Under the default limit of 1 MiB: about half a million items of two bytes each. */
  const halfAMillion = 499_000;
  /** Under JSON_MAX_VALUES (100,000): parsed, then checked against the schema's counts. */
  const ninetyThousand = 90_000;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createUser(t, Role.Owner);
  });

  afterAll(() => t.close());

  /** Sends the body, asking /livez meanwhile; the refusal, its size as JSON, and every /livez status. */
  async function refusedWhileLive(path: string, body: unknown, method: 'post' | 'patch' = 'post'): Promise<{ res: Response; bytes: number; livez: number[] }> {
    const text = JSON.stringify(body);
    const livez: number[] = [];
    let done = false;
    const polling = (async () => {
      while (!done) livez.push((await t.http().get('/livez')).status);
    })();
    const contentType = method === 'patch' ? 'application/merge-patch+json' : 'application/json';
    const res = await t.http()[method](path).set(owner.auth).set('content-type', contentType).send(text);
    done = true;
    await polling;
    expect(livez.every((status) => status === 200)).toBe(true);
    return { res, bytes: Buffer.byteLength(JSON.stringify(res.body)), livez };
  }

  it("an owner's webhook with half a million event types is refused before it is parsed, in an answer of 200 bytes (87 MB before)", async () => {
    const { res, bytes } = await refusedWhileLive('/api/v0/organization/webhooks', {
      url: 'https://example.com/hook',
      eventTypes: Array(halfAMillion).fill(0),
    });
    expectV0Error(res, 400, 'json_too_many_values');
    expect(res.body.metadata).toEqual({ code: 'json_too_many_values', maxValues: 100_000 });
    expect(bytes).toBeLessThan(512);
  });

  it("a member's 32 MiB message of sixteen million numbers is refused the same way (330 ms of parsing before)", async () => {
    const member = await createUser(t, Role.Member, { id: owner.organizationId, slug: owner.organizationSlug });
    const session = await t.http().post('/api/v0/sessions').set(member.auth).send({ title: 'x' });
    expectStatus(session, 201);
    const text = JSON.stringify({ text: 'hi', images: Array(16_000_000).fill(0) });
    expect(text.length).toBeLessThan(32 * MiB);
    const res = await t.http().post(`/api/v0/sessions/${session.body.id}/messages`).set(member.auth).set('content-type', 'application/json').send(text);
    expectV0Error(res, 400, 'json_too_many_values');
  });

  it("an owner's webhook with 90,000 event types is one problem in an answer of 200 bytes", async () => {
    const { res, bytes } = await refusedWhileLive('/api/v0/organization/webhooks', {
      url: 'https://example.com/hook',
      eventTypes: Array(ninetyThousand).fill(0),
    });
    expectV0Error(res, 400, 'validation_failed');
    expect(res.body.metadata).toEqual({
      code: 'validation_failed',
      errors: [{ field: 'eventTypes', message: expect.stringMatching(/^must NOT have more than \d+ items$/) }],
      errorCount: 1,
    });
    expect(bytes).toBeLessThan(512);
  });

  it("a session's 90,000 tags are refused the same way", async () => {
    const { res, bytes } = await refusedWhileLive('/api/v0/sessions', { title: 'x', sessionSettings: { tags: Array(ninetyThousand).fill(0) } });
    expectV0Error(res, 400, 'validation_failed');
    expect(res.body.metadata.errors).toEqual([{ field: 'sessionSettings.tags', message: 'must NOT have more than 50 items' }]);
    expect(bytes).toBeLessThan(512);
  });

  it('eighty thousand unknown fields: the first 20 named, all counted, nothing stored', async () => {
    const body: Record<string, number> = { title: 0 };
    for (let i = 0; i < 80_000; i++) body[`f${i}`] = 0;
    const before = await t.http().get('/api/v0/sessions').set(owner.auth);
    const { res, bytes } = await refusedWhileLive('/api/v0/sessions', body);
    expectV0Error(res, 400, 'validation_failed');
    expect(res.body.metadata.errors).toHaveLength(20);
    expect(res.body.metadata.errors[0]).toEqual({ field: 'f0', message: 'is not an accepted field' });
    expect(res.body.metadata.errorCount).toBe(80_000);
    expect(res.body.detail).toBe('f0: is not an accepted field (and 79999 more problems)');
    expect(bytes).toBeLessThan(2048);
    const after = await t.http().get('/api/v0/sessions').set(owner.auth);
    expect(after.body.sessions).toEqual(before.body.sessions);
  });

  it('a merge patch of the controls with a list far over its limit', async () => {
    const { res, bytes } = await refusedWhileLive(
      '/api/v0/organization/enterprise-controls',
      { settings: { modelPolicy: { allowedModelIds: Array(ninetyThousand).fill(0) } } },
      'patch',
    );
    expectV0Error(res, 400, 'validation_failed');
    expect(res.body.metadata.errors).toEqual([
      { field: 'settings.modelPolicy.allowedModelIds', message: expect.stringMatching(/^must NOT have more than \d+ items$/) },
    ]);
    expect(bytes).toBeLessThan(512);
  });

  it('a field name of 500,000 characters is quoted back in 200', async () => {
    const { res, bytes } = await refusedWhileLive('/api/v0/organization/enterprise-controls', { settings: { ['k'.repeat(500_000)]: 1 } }, 'patch');
    expectV0Error(res, 400, 'validation_failed');
    expect(res.body.metadata.errors).toEqual([{ field: `settings.${'k'.repeat(191)}...`, message: 'is not an accepted field' }]);
    expect(bytes).toBeLessThan(1024);
  });
});

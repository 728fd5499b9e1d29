import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { ApiKeysService, Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

const GENERATED_ID = /^req_[0-9a-f]{32}$/;

/** The spec's v0 error body, with exactly its keys and nothing of Nest's or Fastify's own. */
function expectV0Error(res: Response, status: number, code?: string) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.body as Record<string, unknown>;
  expect(body).toEqual({
    detail: expect.any(String),
    status,
    title: expect.any(String),
    ...('metadata' in body ? { metadata: expect.any(Object) } : {}),
  });
  expect(Object.keys(body).every((k) => ['detail', 'status', 'title', 'metadata'].includes(k))).toBe(true);
  expect((body.detail as string).length).toBeGreaterThan(0);
  for (const key of ['message', 'statusCode', 'error', 'stack', 'requestId', 'code']) expect(body).not.toHaveProperty(key);
  if (code) expect(body.metadata).toMatchObject({ code });
  expectNoInternals(res);
}

/** Analytics errors: `{title, detail, status, requestId}`, requestId being the response's x-request-id. */
function expectAnalyticsError(res: Response, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['detail', 'requestId', 'status', 'title']);
  expect(res.body).toEqual({ title: expect.any(String), detail: expect.any(String), status, requestId: res.headers['x-request-id'] });
  expectNoInternals(res);
}

/** No stack frames, source paths or dependency paths anywhere in an error response. */
function expectNoInternals(res: Response) {
  expect(res.text).not.toMatch(/\bat [\w.<>]+ \(|\bat .+:\d+:\d+|\n\s+at /);
  expect(res.text).not.toContain('/src/');
  expect(res.text).not.toContain('node_modules');
  expect(res.text).not.toMatch(/\.ts:\d+|\.js:\d+/);
  expect(res.text).not.toMatch(/"stack"/);
}

describe('Errors and request ids', () => {
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createUser(t, Role.Owner);
    member = await createUser(t, Role.Member, { id: owner.organizationId, slug: owner.organizationSlug });
  });

  afterAll(() => t.close());

  describe('the v0 error body', () => {
    it('400 on a body validation error: names the field, lists problems, nothing else', async () => {
      const res = await t.http().post('/settings/api-keys').set(owner.auth).send({ name: 42, extra: 'x' });
      expectV0Error(res, 400, 'validation_failed');
      expect(res.body.title).toBe('Bad Request');
      expect(res.body.detail).toMatch(/^(name|extra): /);
      expect(res.body.metadata.errors).toEqual(
        expect.arrayContaining([
          { field: 'name', message: expect.any(String) },
          { field: 'extra', message: 'is not an accepted field' },
        ]),
      );
      expect(JSON.stringify(res.body)).not.toContain('"x"');
    });

    it('400 on a query validation error', async () => {
      const res = await t.http().get('/settings/api-keys?limit=0').set(owner.auth);
      expectV0Error(res, 400, 'validation_failed');
      expect(res.body.detail).toContain('limit');
      expect(res.body.metadata.errors).toEqual([{ field: 'limit', message: 'must be a whole number from 1 to 100' }]);
    });

    it('401 without credentials', async () => {
      const res = await t.http().get('/settings/api-keys');
      expectV0Error(res, 401, 'missing_credentials');
      expect(res.body.title).toBe('Unauthorized');
    });

    it('401 with an unknown key', async () => {
      const res = await t
        .http()
        .get('/settings/api-keys')
        .set({ Authorization: `Bearer apk_${'Z'.repeat(43)}` });
      expectV0Error(res, 401, 'invalid_credentials');
    });

    it('403 for a role the operation refuses', async () => {
      const res = await t.http().get('/settings/api-keys?scope=organization').set(member.auth);
      expectV0Error(res, 403, 'insufficient_role');
      expect(res.body.title).toBe('Forbidden');
    });

    it('404 for a resource that does not exist', async () => {
      const res = await t.http().delete(`/settings/api-keys/${randomUUID()}`).set(owner.auth);
      expectV0Error(res, 404, 'api_key_not_found');
      expect(res.body.title).toBe('Not Found');
    });
  });

  describe('unknown routes', () => {
    it.each([
      ['without credentials', {}],
      ['with valid credentials', 'owner'],
      ['with invalid credentials', { Authorization: 'Bearer nonsense' }],
    ])('answer 404 route_not_found in the v0 body %s', async (_, headers) => {
      const auth = headers === 'owner' ? owner.auth : (headers as Record<string, string>);
      for (const [method, path] of [
        ['get', '/nope'],
        ['get', '/api/v0/sessions-that-do-not-exist?limit=5'],
        ['post', '/settings/api-keys/extra/segments'],
        ['put', '/settings/api-keys-nope'],
      ] as const) {
        const res = await t.http()[method](path).set(auth);
        expectV0Error(res, 404, 'route_not_found');
        expect(res.body.metadata).toEqual({ code: 'route_not_found' });
        expect(res.body.detail).toContain(path.split('?')[0]);
        expect(res.body.detail).not.toContain('limit=5');
        expect(res.headers['x-request-id']).toMatch(GENERATED_ID);
      }
    });
  });

  describe('x-request-id', () => {
    it('is on every response, success or error', async () => {
      const responses = await Promise.all([
        t.http().get('/healthz'),
        t.http().get('/settings/api-keys').set(owner.auth),
        t.http().post('/settings/api-keys').set(owner.auth).send({ name: 'rid' }),
        t.http().get('/docs-json'),
        t.http().get('/docs'),
        t.http().get('/settings/api-keys'),
        t.http().get('/settings/api-keys?limit=abc').set(owner.auth),
        t.http().get('/settings/api-keys?scope=organization').set(member.auth),
        t.http().get('/nope'),
        t.http().get('/api/v1/analytics/tokens'),
        t.http().post('/settings/api-keys').set(owner.auth).set('content-type', 'text/plain').send('hi'),
        t.http().post('/settings/api-keys').set(owner.auth).set('content-type', 'application/json').send('{'),
      ]);
      expect(responses.map((r) => r.status)).toEqual([200, 200, 201, 200, 200, 401, 400, 403, 404, 401, 415, 400]);
      const ids = responses.map((r) => r.headers['x-request-id']);
      for (const id of ids) expect(id).toMatch(GENERATED_ID);
      expect(new Set(ids).size).toBe(ids.length);
    });

    it.each([
      ['a uuid', randomUUID()],
      ['a token with . _ : -', 'trace-01:span_02.retry-3'],
      ['one character', 'x'],
      ['128 characters', 'a'.repeat(128)],
    ])('echoes a sane incoming id (%s), on success and on error', async (_, id) => {
      const ok = await t.http().get('/healthz').set('x-request-id', id);
      expect(ok.status).toBe(200);
      expect(ok.headers['x-request-id']).toBe(id);
      const err = await t.http().get('/settings/api-keys').set('x-request-id', id);
      expect(err.status).toBe(401);
      expect(err.headers['x-request-id']).toBe(id);
    });

    it.each([
      ['129 characters', 'a'.repeat(129)],
      ['300 characters', 'b'.repeat(300)],
      ['a space', 'a b'],
      ['a slash', 'a/b'],
      ['quotes and angle brackets', '"><script>'],
      ['a semicolon', 'id;drop'],
      ['non-ASCII (as latin1 bytes)', 'r\u00e9q'],
      ['an empty value', ''],
    ])('replaces an insane incoming id (%s) with a generated one', async (_, id) => {
      for (const path of ['/healthz', '/settings/api-keys', '/api/v1/analytics/tokens']) {
        const res = await t.http().get(path).set('x-request-id', id);
        expect(res.headers['x-request-id']).toMatch(GENERATED_ID);
        expect(res.headers['x-request-id']).not.toBe(id);
        if (path === '/api/v1/analytics/tokens') expect(res.body.requestId).toBe(res.headers['x-request-id']);
      }
    });

    it('a repeated x-request-id header is not trusted', async () => {
      const res = await t
        .http()
        .get('/healthz')
        .set({ 'x-request-id': ['one', 'two'] });
      expect(res.status).toBe(200);
      expect(res.headers['x-request-id']).toMatch(GENERATED_ID);
    });
  });

  describe('request bodies', () => {
    it.each([
      ['text/plain', 'hello'],
      ['application/x-www-form-urlencoded', 'name=k'],
      ['application/xml', '<name>k</name>'],
      ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\nk\r\n--x--\r\n'],
    ])('a %s body answers 415 in the v0 body; without a credential 401, the body unread', async (type, body) => {
      const res = await t.http().post('/settings/api-keys').set(owner.auth).set('content-type', type).send(body);
      expectV0Error(res, 415, 'unsupported_media_type');
      expect(res.body.title).toBe('Unsupported Media Type');
      expect(res.body.detail).toContain('application/json');
      expectV0Error(await t.http().post('/settings/api-keys').set('content-type', type).send(body), 401, 'missing_credentials');
      const keys = await t.http().get('/settings/api-keys?limit=100').set(owner.auth);
      expect(keys.body.apiKeys.map((k: { name: string }) => k.name)).not.toContain('k');
    });

    it.each([
      ['truncated', '{"name": "k"'],
      ['single quotes', "{'name': 'k'}"],
      ['a trailing comma', '{"name": "k",}'],
      ['bare words', 'name=k'],
    ])('malformed JSON (%s) answers 400 invalid_json; without a credential 401, the body unread', async (_, body) => {
      const res = await t.http().post('/settings/api-keys').set(owner.auth).set('content-type', 'application/json').send(body);
      expectV0Error(res, 400, 'invalid_json');
      expect(res.body.metadata).toEqual({ code: 'invalid_json' });
      expect(res.body.detail).toBe('The request body is not valid JSON.');
      expectV0Error(await t.http().post('/settings/api-keys').set('content-type', 'application/json').send(body), 401, 'missing_credentials');
    });

    it('a JSON body just under the default 1 MiB limit reaches validation; one byte over answers 413', async () => {
      expect(t.config.BODY_LIMIT_BYTES).toBe(1024 * 1024);
      const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024 - 20) });
      expect(big.length).toBe(1024 * 1024 - 9);
      const over = JSON.stringify({ name: 'x'.repeat(1024 * 1024 - 10) });
      expect(over.length).toBe(1024 * 1024 + 1);
      const refused = await t.http().post('/settings/api-keys').set(owner.auth).set('content-type', 'application/json').send(over);
      expectV0Error(refused, 413, 'payload_too_large');
      expect(refused.body.metadata).toEqual({ code: 'payload_too_large', limitBytes: 1024 * 1024 });
      const res = await t.http().post('/settings/api-keys').set(owner.auth).set('content-type', 'application/json').send(big);
      expectV0Error(res, 400, 'validation_failed');
      expect(res.body.detail).toMatch(/^name: /);
      expect(res.body.metadata.errors).toEqual([{ field: 'name', message: 'must be shorter than or equal to 100 characters' }]);
      expect(res.text.length).toBeLessThan(2000);
    });
  });

  describe('unexpected errors', () => {
    afterEach(() => jest.restoreAllMocks());
    /** No input may cause a 500, so the document lists it nowhere: these answers are forced by a broken service. */
    const FORCED_500 = 'a mocked service fails: the 500 is forced, not one an input can cause';

    it('answer 500 internal_error in the v0 body quoting the request id, never the error itself', async () => {
      const failure = new Error('boom: connection to 10.0.0.7 refused in /work/main/src/secret.ts');
      jest.spyOn(t.app.get(ApiKeysService), 'list').mockRejectedValueOnce(failure);
      const res = await t.http().unchecked(FORCED_500).get('/settings/api-keys').set(owner.auth).set('x-request-id', 'trace-500');
      expectV0Error(res, 500, 'internal_error');
      expect(res.body.title).toBe('Internal Server Error');
      expect(res.body.metadata).toEqual({ code: 'internal_error' });
      expect(res.body.detail).toContain('trace-500');
      expect(res.headers['x-request-id']).toBe('trace-500');
      expect(res.text).not.toMatch(/boom|10\.0\.0\.7|secret/);
      // ...and the next request is served normally.
      expect((await t.http().get('/settings/api-keys').set(owner.auth)).status).toBe(200);
    });

    it('a thrown non-Error value is a 500 too', async () => {
      jest.spyOn(t.app.get(ApiKeysService), 'list').mockImplementationOnce(() => {
        throw 'a string, not an Error';
      });
      const res = await t.http().unchecked(FORCED_500).get('/settings/api-keys').set(owner.auth);
      expectV0Error(res, 500, 'internal_error');
      expect(res.text).not.toContain('a string, not an Error');
    });
  });

  describe('malformed URLs', () => {
    // Fastify refuses such a path before routing; frameworkErrors answers it in our body.
    it('a path with a broken percent-escape answers 400 in the v0 body with x-request-id', async () => {
      const res = await t.http().get('/settings/api-keys/%E0%A4%A').set(owner.auth);
      expect(res.headers['x-request-id']).toMatch(GENERATED_ID);
      expectV0Error(res, 400);
    });

    it('on analytics paths, in their flavour', async () => {
      const res = await t.http().get('/api/v1/analytics/x%').set('x-request-id', 'bad-url-1');
      expect(res.headers['x-request-id']).toBe('bad-url-1');
      expectAnalyticsError(res, 400);
    });

    it('a broken percent-escape in the query string is only a bad value', async () => {
      const res = await t.http().get('/settings/api-keys?limit=%E0%A4%A').set(owner.auth);
      expectV0Error(res, 400, 'validation_failed');
      expect(res.body.detail).toMatch(/^limit: /);
      expect(res.headers['x-request-id']).toMatch(GENERATED_ID);
    });
  });

  describe('analytics-flavoured paths', () => {
    it.each([
      ['without credentials', {}],
      ['with credentials', 'owner'],
    ])('answer {title, detail, status, requestId} %s', async (_, headers) => {
      const auth = headers === 'owner' ? owner.auth : (headers as Record<string, string>);
      for (const path of ['/api/v1/analytics/nothing', '/api/v1/nothing']) {
        const res = await t.http().get(path).set(auth);
        expectAnalyticsError(res, 404);
        expect(res.body.title).toBe('Not Found');
        expect(res.body.requestId).toMatch(GENERATED_ID);
      }
    });

    it('carry the caller’s own request id in requestId', async () => {
      const res = await t.http().get('/api/v1/analytics/tokens').set('x-request-id', 'analytics-trace-42').set(owner.auth);
      expectAnalyticsError(res, 400);
      expect(res.body.requestId).toBe('analytics-trace-42');
    });

    it('use the same flavour for body errors', async () => {
      const res = await t.http().post('/api/v1/analytics/rollup').set(owner.auth).set('content-type', 'application/json').send('{oops');
      expectAnalyticsError(res, 400);
    });
  });

  describe('readiness-flavoured paths', () => {
    it('answer detail, status, title and requestId, with the v0 metadata', async () => {
      const res = await t.http().get('/api/organization/maturity-level-reports/none').set('x-request-id', 'ready-1');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: expect.any(String), status: 404, title: 'Not Found', requestId: 'ready-1', metadata: { code: 'route_not_found' } });
    });
  });

  describe('unauthenticated endpoints', () => {
    it('GET /healthz answers 200 without credentials', async () => {
      const res = await t.http().get('/healthz');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok', database: t.config.engine });
    });

    it('GET /docs answers the Swagger UI page without credentials', async () => {
      const res = await t.http().get('/docs');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toMatch(/swagger/i);
    });

    it('GET /docs-json answers the OpenAPI document without credentials', async () => {
      const res = await t.http().get('/docs-json');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body.openapi).toMatch(/^3\./);
      expect(res.body.info).toMatchObject({ title: 'Agent Platform API', version: '0.1.0' });
      expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(['/healthz', '/settings/api-keys']));
    });
  });
});

describe('A body larger than BODY_LIMIT_BYTES', () => {
  let t: TestApp;
  let user: TestUser;

  beforeAll(async () => {
    // A larger message limit must not raise the limit of the other routes.
    t = await startTestApp({ BODY_LIMIT_BYTES: '2048', MESSAGE_BODY_LIMIT_BYTES: '65536' });
    user = await createUser(t, Role.Member);
  });

  afterAll(() => t.close());

  it('answers 413 in the v0 body with the limit; without a credential 401 before the body', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(4096) });
    const res = await t.http().post('/settings/api-keys').set(user.auth).set('content-type', 'application/json').send(body);
    expectV0Error(res, 413, 'payload_too_large');
    expect(res.body.title).toBe('Payload Too Large');
    expect(res.body.metadata).toEqual({ code: 'payload_too_large', limitBytes: 2048 });
    expect(res.body.detail).toContain('2048');
    expect(res.headers['x-request-id']).toMatch(GENERATED_ID);
    expectV0Error(await t.http().post('/settings/api-keys').set('content-type', 'application/json').send(body), 401, 'missing_credentials');
  });

  it('a body just under the limit is read and validated', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(1900) });
    expect(body.length).toBeLessThan(2048);
    const res = await t.http().post('/settings/api-keys').set(user.auth).set('content-type', 'application/json').send(body);
    expectV0Error(res, 400, 'validation_failed');
    expect(res.body.metadata.errors.map((e: { field: string }) => e.field)).toEqual(['name']);
  });

  it('answers 413 on analytics paths in their flavour', async () => {
    const res = await t
      .http()
      .post('/api/v1/analytics/rollup')
      .set(user.auth)
      .set('content-type', 'application/json')
      .send(JSON.stringify({ x: 'y'.repeat(4096) }));
    expectAnalyticsError(res, 413);
  });
});

import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

const SESSION = '/api/v0/sessions/00000000-0000-4000-8000-000000000000';

/** A known path asked with a method it does not have: 405 with Allow, in that path's error body. */
describe('Unsupported methods on known paths', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createUser(t, Role.Owner);
  });

  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['delete', '/api/v0/sessions', 'GET, HEAD, POST'],
    ['put', '/api/v0/sessions', 'GET, HEAD, POST'],
    ['post', SESSION, 'GET, HEAD, PATCH, DELETE'],
    ['put', `${SESSION}/messages?limit=5`, 'GET, HEAD, POST'],
    ['patch', '/settings/api-keys', 'GET, HEAD, POST'],
    ['post', '/healthz', 'GET, HEAD'],
  ] as const)('%s %s answers 405 in the v0 body, Allow: %s', async (method, path, allow) => {
    for (const auth of [owner.auth, {}, { Authorization: 'Bearer nonsense' }]) {
      const res = await t.http()[method](path).set(auth);
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe(allow);
      expect(res.body).toEqual({
        detail: expect.stringContaining(`${method.toUpperCase()} is not allowed on ${path.split('?')[0]}`),
        status: 405,
        title: 'Method Not Allowed',
        metadata: { code: 'method_not_allowed', allowed: allow.split(', ') },
      });
      expect(res.body.detail).not.toContain('limit=5');
      expect(res.headers['x-request-id']).toBeDefined();
    }
  });

  it('answers 405 in the analytics body on analytics paths', async () => {
    const res = await t.http().delete('/api/v1/analytics/tokens?startDate=2026-01-01').set(owner.auth).set('x-request-id', 'm-405');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    expect(res.body).toEqual({ title: 'Method Not Allowed', detail: expect.stringContaining('DELETE is not allowed'), status: 405, requestId: 'm-405' });
  });

  it.each([
    ['invalid JSON', 'application/json', '{oops'],
    ['not JSON', 'text/plain', 'hello'],
  ])('answers 405 before reading a body (%s)', async (_, type, body) => {
    const res = await t.http().post('/api/v1/analytics/users').set(owner.auth).set('content-type', type).send(body);
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
  });

  it('is documented where clients read the contract', async () => {
    const doc = (await t.http().get('/docs-json')).body as { info: { description: string } };
    expect(doc.info.description).toMatch(/\*\*405\*\* `method_not_allowed` with `Allow`/);
  });

  it('still serves the methods the path has, HEAD included', async () => {
    expect((await t.http().get('/api/v0/sessions').set(owner.auth)).status).toBe(200);
    expect((await t.http().head('/api/v0/sessions').set(owner.auth)).status).toBe(200);
    expect((await t.http().get(SESSION).set(owner.auth)).status).toBe(404);
  });

  it.each([
    ['delete', '/api/v0/nothing'],
    ['get', '/api/v0/sessions/a/b/c'],
    ['delete', '/api/v0/sessions/'],
    ['post', '/api/v1/analytics/nothing'],
    ['get', '/nope'],
  ] as const)('%s %s (no such path) stays 404', async (method, path) => {
    const res = await t.http()[method](path).set(owner.auth);
    expect(res.status).toBe(404);
    expect(res.headers.allow).toBeUndefined();
  });
});

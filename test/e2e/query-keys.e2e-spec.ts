import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

type Flavour = 'v0' | 'analytics' | 'readiness';

/** Every route that reads a query string, one valid query each, and its error flavour. */
const ROUTES: Array<[string, string, Flavour]> = [
  ['/api/v0/sessions', 'limit=5', 'v0'],
  ['/api/v0/sessions/00000000-0000-4000-8000-000000000000/messages', 'limit=5', 'v0'],
  ['/settings/api-keys', 'limit=5', 'v0'],
  ['/api/v0/organization/enterprise-controls/history', 'limit=5', 'v0'],
  ['/api/v1/analytics/users', 'startDate=2026-01-01&endDate=2026-01-02', 'analytics'],
  ['/api/v1/analytics/tokens', 'startDate=2026-01-01&endDate=2026-01-02', 'analytics'],
  ['/api/organization/maturity-level-reports', 'limit=5', 'readiness'],
];

/** A 400 in the path's error body, whose detail names the key. */
function expect400(res: Response, flavour: Flavour, key: string, says: RegExp) {
  expect(res.status).toBe(400);
  expect(res.body.status).toBe(400);
  expect(res.body.detail).toContain(key);
  expect(res.body.detail).toMatch(says);
  if (flavour === 'analytics') expect(Object.keys(res.body).sort()).toEqual(['detail', 'requestId', 'status', 'title']);
  if (flavour === 'v0') expect(res.body).toMatchObject({ metadata: { code: 'validation_failed' } });
  if (flavour === 'v0') expect(res.body).not.toHaveProperty('requestId');
  if (flavour === 'readiness') expect(res.body).toMatchObject({ requestId: expect.any(String), metadata: { code: 'validation_failed' } });
}

describe('Query strings: unknown and repeated keys', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createUser(t, Role.Owner);
  });

  afterAll(async () => {
    await t.close();
  });

  const get = (url: string) => t.http().get(url).set(owner.auth);

  it.each(ROUTES)('%s accepts its own parameters', async (path, query) => {
    expect((await get(`${path}?${query}`)).status).not.toBe(400);
  });

  describe.each(ROUTES)('%s', (path, query, flavour) => {
    it.each(['constructor', '__proto__', 'prototype', 'limitt', 'hasOwnProperty', 'toString', 'pageSize'])(
      'refuses the unknown key %s, naming it',
      async (key) => {
        expect400(await get(`${path}?${query}&${key}=1`), flavour, key, /not an accepted query parameter/);
        expect400(await get(`${path}?${key}=x`), flavour, key, /not an accepted query parameter/);
      },
    );

    it('says a repeated key is repeated', async () => {
      const [key, value] = query.split('=');
      expect400(await get(`${path}?${key}=${value}&${key}=${value}`), flavour, key, /repeated/);
    });
  });

  it('names the accepted parameters', async () => {
    const res = await get('/api/v0/sessions?order=desc');
    expect(res.body.detail).toBe('order: is not an accepted query parameter (accepted: computerId, archived, tag, limit, cursor)');
    expect(res.body.metadata.errors).toEqual([{ field: 'order', message: expect.stringContaining('not an accepted') }]);
  });

  it('says which value is repeated rather than that it is not a string', async () => {
    const res = await get('/api/v0/sessions?limit=1&limit=2');
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe('limit: is repeated: give each query parameter once');
  });

  it.each(['/api/v0/computers', '/healthz', '/api/v0/organization/enterprise-controls'])('%s takes no query parameters: any key is a 400', async (path) => {
    expect((await get(path)).status).toBe(200);
    const res = await get(`${path}?limit=5`);
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe('limit: is not an accepted query parameter (this operation takes no query parameters)');
    expect((await get(`${path}?constructor=1`)).status).toBe(400);
  });

  it('checks the credential and the role first: 401 and 403 come before the 400 for a route taking no query', async () => {
    const guest = await createUser(t, Role.Guest, { id: owner.organizationId, slug: owner.organizationSlug });
    const path = '/api/v0/organization/enterprise-controls?limit=1';
    expect((await t.http().get(path)).status).toBe(401);
    expect((await t.http().get(path).set(guest.auth)).status).toBe(403);
    expect((await get(path)).status).toBe(400);
  });

  it('quotes an unprintable or long key safely', async () => {
    const long = 'k'.repeat(500);
    const res = await get(`/api/v0/sessions?${long}=1`);
    expect(res.status).toBe(400);
    expect(res.body.detail.length).toBeLessThan(200);
    const control = await get('/api/v0/sessions?%1b%5b31m=1');
    expect(control.status).toBe(400);
    expect(control.text).not.toContain('\\u001b');
  });
});

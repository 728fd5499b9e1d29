import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Credentials are looked up at most once per AUTH_CACHE_MS per instance; what that means for changes. */
describe('credential cache', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ AUTH_CACHE_MS: '500' });
  });

  afterAll(() => t.close());

  const createSession = (auth: { Authorization: string }) => t.http().post('/api/v0/sessions').set(auth).send({});

  it('a role changed in the database applies once the cached lookup expires', async () => {
    const member = await createUser(t, Role.Member);
    expect((await createSession(member.auth)).status).toBe(201);
    await t.app.get(DataSource).query(`UPDATE users SET role = 'guest' WHERE id = $1`, [member.userId]);
    expect((await createSession(member.auth)).status).toBe(201);
    await sleep(600);
    expect((await createSession(member.auth)).status).toBe(403);
  });

  it('a key revoked through this instance answers 401 on the very next request', async () => {
    const owner = await createUser(t, Role.Owner);
    expect((await t.http().get('/api/v0/sessions').set(owner.auth)).status).toBe(200);
    expect((await t.http().delete(`/settings/api-keys/${owner.apiKeyId}`).set(owner.auth)).status).toBe(200);
    expect((await t.http().get('/api/v0/sessions').set(owner.auth)).status).toBe(401);
  });

  it('a key revoked elsewhere (another instance, the database) stops within AUTH_CACHE_MS', async () => {
    const owner = await createUser(t, Role.Owner);
    expect((await t.http().get('/api/v0/sessions').set(owner.auth)).status).toBe(200);
    await t.app.get(DataSource).query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [owner.apiKeyId]);
    await sleep(600);
    const res = await t.http().get('/api/v0/sessions').set(owner.auth);
    expect([res.status, res.body.metadata.code]).toEqual([401, 'revoked_api_key']);
  });

  it('a key past its expiry answers 401 at once, cached or not', async () => {
    const owner = await createUser(t, Role.Owner);
    await t.app.get(DataSource).query(`UPDATE api_keys SET expires_at = now() + interval '300 milliseconds' WHERE id = $1`, [owner.apiKeyId]);
    expect((await t.http().get('/api/v0/sessions').set(owner.auth)).status).toBe(200);
    await sleep(350);
    const res = await t.http().get('/api/v0/sessions').set(owner.auth);
    expect([res.status, res.body.metadata.code]).toEqual([401, 'expired_credentials']);
  });

  it('with AUTH_CACHE_MS=0 every request reads the database', async () => {
    const uncached = await startTestApp({ AUTH_CACHE_MS: '0' });
    try {
      const member = await createUser(uncached, Role.Member);
      expect((await uncached.http().post('/api/v0/sessions').set(member.auth).send({})).status).toBe(201);
      await uncached.app.get(DataSource).query(`UPDATE users SET role = 'guest' WHERE id = $1`, [member.userId]);
      expect((await uncached.http().post('/api/v0/sessions').set(member.auth).send({})).status).toBe(403);
    } finally {
      await uncached.close();
    }
  });
});

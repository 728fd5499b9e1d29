import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { DEFAULT_CONTROLS, OrganizationControlsReader } from '../../src/modules/auth/contracts/organization-controls-reader';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

const JWT_SECRET = 'a-test-secret-that-is-long-enough-for-hs256!';

function expectV0Error(body: Record<string, unknown>, status: number, code?: string) {
  expect(body).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) });
  expect(Object.keys(body).sort()).toEqual(expect.arrayContaining(['detail', 'status', 'title']));
  if (code) expect(body.metadata).toMatchObject({ code });
}

describe('Auth', () => {
  let t: TestApp;
  let jwks: Server;
  let jwksUrl: string;
  const rsa = generateKeyPair('RS256');

  beforeAll(async () => {
    const { publicKey } = await rsa;
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    // The identity provider is outside our system: a real local server publishing its keys.
    jwks = createServer((_, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;
    t = await startTestApp({ JWT_SECRET, JWT_JWKS_URL: jwksUrl });
  });

  afterAll(async () => {
    await t.close();
    jwks.close();
  });

  const listKeys = (headers: Record<string, string> = {}) => t.http().get('/settings/api-keys').set(headers);

  describe('credentials that answer 401', () => {
    it.each([
      ['no Authorization header', {}, 'missing_credentials'],
      ['a scheme other than Bearer', { Authorization: 'Basic dXNlcjpwYXNz' }, 'malformed_credentials'],
      ['Bearer with no token', { Authorization: 'Bearer ' }, 'malformed_credentials'],
      ['a token that is neither key nor JWT', { Authorization: 'Bearer hello' }, 'malformed_credentials'],
      ['an unknown API key', { Authorization: `Bearer apk_${'A'.repeat(43)}` }, 'invalid_credentials'],
      ['a truncated API key', { Authorization: 'Bearer apk_abc' }, 'invalid_credentials'],
    ])('%s', async (_, headers, code) => {
      const res = await listKeys(headers);
      expect(res.status).toBe(401);
      expectV0Error(res.body, 401, code);
      expect(res.headers['x-request-id']).toBeTruthy();
    });

    it('a revoked key answers 401 on the very next request', async () => {
      const user = await createUser(t, Role.Member);
      expect((await listKeys(user.auth)).status).toBe(200);
      const revoke = await t.http().delete(`/settings/api-keys/${user.apiKeyId}`).set(user.auth);
      expect(revoke.status).toBe(200);
      expect(revoke.body.revokedAt).toEqual(expect.any(Number));
      const res = await listKeys(user.auth);
      expect(res.status).toBe(401);
      expectV0Error(res.body, 401, 'revoked_api_key');
    });

    it('an expired API key answers 401', async () => {
      const user = await createUser(t, Role.Member);
      const created = await t
        .http()
        .post('/settings/api-keys')
        .set(user.auth)
        .send({ name: 'short', expiresAt: new Date(Date.now() + 1500).toISOString() });
      expect(created.status).toBe(201);
      expect((await listKeys({ Authorization: `Bearer ${created.body.key}` })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 1600));
      const res = await listKeys({ Authorization: `Bearer ${created.body.key}` });
      expect(res.status).toBe(401);
      expectV0Error(res.body, 401, 'expired_credentials');
    });
  });

  describe('API keys', () => {
    let member: TestUser;
    beforeAll(async () => {
      member = await createUser(t, Role.Member);
    });

    it('shows a new key once and stores only its hash', async () => {
      const res = await t.http().post('/settings/api-keys').set(member.auth).send({ name: 'laptop' });
      expect(res.status).toBe(201);
      expect(res.body.key).toMatch(/^apk_[A-Za-z0-9_-]{43}$/);
      expect(res.body.prefix).toBe(res.body.key.slice(0, 12));
      const stored = await t.app.get(DataSource).query('SELECT * FROM api_keys WHERE id = $1', [res.body.id]);
      expect(stored).toHaveLength(1);
      expect(JSON.stringify(stored[0])).not.toContain(res.body.key);
      expect(JSON.stringify(stored[0])).not.toContain(res.body.key.slice(12));
      expect(stored[0].key_hash).toMatch(/^[0-9a-f]{64}$/);

      const listed = await listKeys(member.auth);
      expect(JSON.stringify(listed.body)).not.toContain(res.body.key);
      expect(listed.body.apiKeys.find((k: { id: string }) => k.id === res.body.id)).toMatchObject({ name: 'laptop', prefix: res.body.prefix });
      expect(listed.body.apiKeys.every((k: Record<string, unknown>) => !('key' in k))).toBe(true);
    });

    it('the new key works and records when it was last used', async () => {
      const created = await t.http().post('/settings/api-keys').set(member.auth).send({ name: 'ci' });
      expect(created.body.lastUsedAt).toBeNull();
      const before = Date.now();
      const res = await listKeys({ Authorization: `Bearer ${created.body.key}` });
      expect(res.status).toBe(200);
      const mine = res.body.apiKeys.find((k: { id: string }) => k.id === created.body.id);
      expect(mine.lastUsedAt).toBeGreaterThanOrEqual(before - 5);
    });

    it('rejects a bad body with the field named', async () => {
      for (const [body, field] of [
        [{}, 'name'],
        [{ name: '' }, 'name'],
        [{ name: 7 }, 'name'],
        [{ name: 'x'.repeat(101) }, 'name'],
        [{ name: 'ok', extra: true }, 'extra'],
        [{ name: 'ok', expiresAt: 'tomorrow' }, 'expiresAt'],
        [{ name: 'ok', expiresAt: '2001-01-01T00:00:00Z' }, 'expiresAt'],
      ] as const) {
        const res = await t.http().post('/settings/api-keys').set(member.auth).send(body);
        expect(res.status).toBe(400);
        expectV0Error(res.body, 400, 'validation_failed');
        expect(res.body.detail).toContain(field);
        expect(res.body.metadata.errors.map((e: { field: string }) => e.field)).toContain(field);
      }
    });

    it('lists every problem of a body in metadata', async () => {
      const res = await t.http().post('/settings/api-keys').set(member.auth).send({ name: 5, expiresAt: 5, other: 1 });
      expect(res.status).toBe(400);
      const fields = res.body.metadata.errors.map((e: { field: string }) => e.field);
      expect(new Set(fields)).toEqual(new Set(['name', 'expiresAt', 'other']));
    });

    it('a guest may create their own key', async () => {
      const guest = await createUser(t, Role.Guest);
      expect((await t.http().post('/settings/api-keys').set(guest.auth).send({ name: 'g' })).status).toBe(201);
    });
  });

  describe('roles and organizations', () => {
    it('only owners and managers list the whole organization’s keys', async () => {
      const org = await createOrganization(t);
      const [owner, manager, member, guest] = await Promise.all([Role.Owner, Role.Manager, Role.Member, Role.Guest].map((role) => createUser(t, role, org)));
      for (const admin of [owner, manager]) {
        const res = await t.http().get('/settings/api-keys?scope=organization').set(admin.auth);
        expect(res.status).toBe(200);
        expect(res.body.apiKeys.map((k: { id: string }) => k.id).sort()).toEqual([owner, manager, member, guest].map((u) => u.apiKeyId).sort());
      }
      for (const user of [member, guest]) {
        const res = await t.http().get('/settings/api-keys?scope=organization').set(user.auth);
        expect(res.status).toBe(403);
        expectV0Error(res.body, 403, 'insufficient_role');
      }
      const own = await t.http().get('/settings/api-keys').set(member.auth);
      expect(own.body.apiKeys.map((k: { id: string }) => k.id)).toEqual([member.apiKeyId]);
    });

    it('another organization’s key id answers 404, even to its owner', async () => {
      const ours = await createUser(t, Role.Owner);
      const theirs = await createUser(t, Role.Member);
      const res = await t.http().delete(`/settings/api-keys/${theirs.apiKeyId}`).set(ours.auth);
      expect(res.status).toBe(404);
      expectV0Error(res.body, 404, 'api_key_not_found');
      expect(JSON.stringify(res.body)).not.toContain(theirs.userId);
      expect((await listKeys(theirs.auth)).status).toBe(200);
    });

    it('a member cannot revoke a colleague’s key (404), an owner can', async () => {
      const org = await createOrganization(t);
      const [owner, member, colleague] = await Promise.all([createUser(t, Role.Owner, org), createUser(t, Role.Member, org), createUser(t, Role.Member, org)]);
      expect((await t.http().delete(`/settings/api-keys/${colleague.apiKeyId}`).set(member.auth)).status).toBe(404);
      expect((await t.http().delete(`/settings/api-keys/${colleague.apiKeyId}`).set(owner.auth)).status).toBe(200);
      expect((await listKeys(colleague.auth)).status).toBe(401);
    });

    it('a malformed key id answers 404', async () => {
      const user = await createUser(t, Role.Owner);
      const res = await t.http().delete('/settings/api-keys/not-a-uuid').set(user.auth);
      expect(res.status).toBe(404);
      expectV0Error(res.body, 404, 'api_key_not_found');
    });
  });

  describe('JWTs', () => {
    let user: TestUser;
    beforeAll(async () => {
      user = await createUser(t, Role.Manager);
    });

    const hs256 = (claims: Record<string, unknown>, expiresIn: string | number = '5m', secret = JWT_SECRET) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime(expiresIn).sign(new TextEncoder().encode(secret));

    it('an HS256 JWT with sub and org_id authenticates as that user', async () => {
      const token = await hs256({ sub: user.userId, org_id: user.organizationId });
      const res = await listKeys({ Authorization: `Bearer ${token}` });
      expect(res.status).toBe(200);
      expect(res.body.apiKeys.map((k: { id: string }) => k.id)).toEqual([user.apiKeyId]);
    });

    it('a JWT verified against the JWKS authenticates', async () => {
      const { privateKey } = await rsa;
      const token = await new SignJWT({ sub: user.userId, org_id: user.organizationId })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
      expect((await listKeys({ Authorization: `Bearer ${token}` })).status).toBe(200);
    });

    describe('age (JWT_MAX_AGE_SECONDS, default 86400)', () => {
      const now = () => Math.floor(Date.now() / 1000);
      const DAY = 86_400;
      /** Signed with the right secret, for the right user: only iat and exp vary. */
      const timed = (times: { iat?: number; exp: number }) => {
        const jwt = new SignJWT({ sub: user.userId, org_id: user.organizationId }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime(times.exp);
        if (times.iat !== undefined) jwt.setIssuedAt(times.iat);
        return jwt.sign(new TextEncoder().encode(JWT_SECRET));
      };
      const rs256 = async (times: { iat: number; exp: number }) =>
        new SignJWT({ sub: user.userId, org_id: user.organizationId })
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .setIssuedAt(times.iat)
          .setExpirationTime(times.exp)
          .sign((await rsa).privateKey);

      it.each([
        ['without iat (and a valid exp)', () => timed({ exp: now() + 300 }), 'invalid_credentials', /iat/],
        [
          'issued two days ago, still unexpired',
          () => timed({ iat: now() - 2 * DAY, exp: now() + 300 }),
          'expired_credentials',
          /issued more than 86400 s ago/,
        ],
        [
          'issued just now but valid for ten years',
          () => timed({ iat: now(), exp: now() + 3650 * DAY }),
          'invalid_credentials',
          /lifetime .* exceeds the 86400 s/,
        ],
        ['one second longer-lived than the maximum', () => timed({ iat: now(), exp: now() + DAY + 1 }), 'invalid_credentials', /lifetime/],
        ['issued five minutes in the future', () => timed({ iat: now() + 300, exp: now() + 600 }), 'invalid_credentials', /iat is in the future/],
        ['from the JWKS, valid for ten years', () => rs256({ iat: now(), exp: now() + 3650 * DAY }), 'invalid_credentials', /lifetime/],
        ['from the JWKS, issued two days ago', () => rs256({ iat: now() - 2 * DAY, exp: now() + 300 }), 'expired_credentials', /issued more than/],
      ])('a JWT %s answers 401', async (_, token, code, detail) => {
        const res = await listKeys({ Authorization: `Bearer ${await token()}` });
        expect(res.status).toBe(401);
        expectV0Error(res.body, 401, code);
        expect(res.body.detail).toMatch(detail);
      });

      it.each([
        ['valid for exactly the maximum', () => timed({ iat: now(), exp: now() + DAY })],
        ['issued almost a day ago, about to expire', () => timed({ iat: now() - DAY + 120, exp: now() + 60 })],
        ['issued 30 s ahead of the server clock (skew)', () => timed({ iat: now() + 30, exp: now() + 600 })],
      ])('a JWT %s is accepted', async (_, token) => {
        expect((await listKeys({ Authorization: `Bearer ${await token()}` })).status).toBe(200);
      });
    });

    it.each([
      ['expired', async () => hs256({ sub: 'x', org_id: 'y' }, Math.floor(Date.now() / 1000) - 60), 'expired_credentials'],
      ['signed with another secret', async () => hs256({ sub: 'x', org_id: 'y' }, '5m', 'another-secret-that-is-also-long-enough!!'), 'invalid_credentials'],
      [
        'without exp',
        async () => new SignJWT({ sub: 'x', org_id: 'y' }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(JWT_SECRET)),
        'invalid_credentials',
      ],
      [
        'unsigned (alg none)',
        async () => `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.`,
        'jwt_not_configured',
      ],
      [
        'naming an unknown user',
        async () => hs256({ sub: '01a1fdca-0000-7000-8000-000000000000', org_id: '01a1fdca-0000-7000-8000-000000000000' }),
        'invalid_credentials',
      ],
    ])('a JWT %s answers 401', async (_, token, code) => {
      const res = await listKeys({ Authorization: `Bearer ${await token()}` });
      expect(res.status).toBe(401);
      expectV0Error(res.body, 401, code);
    });

    it('a JWT naming a user of another organization answers 401', async () => {
      const other = await createUser(t, Role.Owner);
      const token = await hs256({ sub: user.userId, org_id: other.organizationId });
      expect((await listKeys({ Authorization: `Bearer ${token}` })).status).toBe(401);
    });
  });
});

describe('JWT_MAX_AGE_SECONDS set lower', () => {
  let t: TestApp;
  let user: TestUser;

  beforeAll(async () => {
    t = await startTestApp({ JWT_SECRET, JWT_MAX_AGE_SECONDS: '120' });
    user = await createUser(t, Role.Member);
  });

  afterAll(() => t.close());

  const withLifetime = (seconds: number) =>
    new SignJWT({ sub: user.userId, org_id: user.organizationId })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + seconds)
      .sign(new TextEncoder().encode(JWT_SECRET));

  it('refuses a five-minute JWT and accepts a one-minute one', async () => {
    const long = await t
      .http()
      .get('/settings/api-keys')
      .set({ Authorization: `Bearer ${await withLifetime(300)}` });
    expect(long.status).toBe(401);
    expect(long.body.detail).toMatch(/exceeds the 120 s/);
    expect(
      (
        await t
          .http()
          .get('/settings/api-keys')
          .set({ Authorization: `Bearer ${await withLifetime(60)}` })
      ).status,
    ).toBe(200);
  });
});

describe('restrictApiKeyCreationToManagers', () => {
  let t: TestApp;
  const restricted = new Set<string>();

  beforeAll(async () => {
    t = await startTestApp();
    // Stand in for the EnterpriseControls module, which binds this reader when it lands.
    const reader = t.app.get(OrganizationControlsReader);
    jest.spyOn(reader, 'read').mockImplementation(async (organizationId: string) => ({
      ...DEFAULT_CONTROLS,
      restrictApiKeyCreationToManagers: restricted.has(organizationId),
    }));
  });

  afterAll(() => t.close());

  it('makes creation 403 for members and guests, not for managers and owners', async () => {
    const org = await createOrganization(t);
    restricted.add(org.id);
    const users = await Promise.all([Role.Owner, Role.Manager, Role.Member, Role.Guest].map((role) => createUser(t, role, org)));
    const statuses = await Promise.all(
      users.map((u) =>
        t
          .http()
          .post('/settings/api-keys')
          .set(u.auth)
          .send({ name: 'k' })
          .then((r) => [u.role, r.status, r.body.metadata?.code]),
      ),
    );
    expect(statuses).toEqual([
      [Role.Owner, 201, undefined],
      [Role.Manager, 201, undefined],
      [Role.Member, 403, 'api_key_creation_restricted'],
      [Role.Guest, 403, 'api_key_creation_restricted'],
    ]);
  });

  it('leaves unrestricted organizations alone', async () => {
    const member = await createUser(t, Role.Member);
    expect((await t.http().post('/settings/api-keys').set(member.auth).send({ name: 'k' })).status).toBe(201);
  });
});

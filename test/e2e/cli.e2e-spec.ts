import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';
import { runNode } from '../utils/processes';
import { startTestApp } from '../utils/test-app';

/** The operator CLI, run as a real process against the same database the server uses. */
describe('npm run cli', () => {
  let database: TestDatabase;
  const cli = (...args: string[]) => runNode('dist/cli/main.js', args, database.env);
  const json = async (...args: string[]) => {
    const result = await cli(...args);
    expect({ args, code: result.code, stderr: result.stderr }).toEqual({ args, code: 0, stderr: '' });
    return JSON.parse(result.stdout);
  };

  beforeAll(async () => {
    database = await createTestDatabase();
  });

  afterAll(() => database.drop());

  it('creates an organization, a user and a key that the server accepts', async () => {
    const org = await json('org:create', 'initech', 'Initech');
    expect(org).toMatchObject({ slug: 'initech', name: 'Initech' });
    const user = await json('user:create', 'initech', 'Peter@Initech.example', 'Peter', 'manager');
    expect(user).toMatchObject({ organizationId: org.id, email: 'peter@initech.example', role: 'manager', kind: 'human' });
    const key = await json('key:create', 'initech', 'peter@initech.example', 'laptop');
    expect(key.key).toMatch(/^apk_/);

    const t = await startTestApp({}, database);
    try {
      const res = await t.http().get('/settings/api-keys?scope=organization').set('Authorization', `Bearer ${key.key}`);
      expect(res.status).toBe(200);
      expect(res.body.apiKeys.map((k: { id: string }) => k.id)).toEqual([key.id]);
    } finally {
      await t.close();
    }

    const revoked = await json('key:revoke', key.id);
    expect(revoked.revokedAt).toEqual(expect.any(String));
    const after = await startTestApp({}, database);
    try {
      expect((await after.http().get('/settings/api-keys').set('Authorization', `Bearer ${key.key}`)).status).toBe(401);
    } finally {
      await after.close();
    }
  });

  it("creates a worker pool and an enrollment token, printed once; the organization's owner sees them, the revocation too", async () => {
    await json('org:create', 'pied-piper', 'Pied Piper');
    await json('user:create', 'pied-piper', 'richard@piedpiper.example', 'Richard', 'owner');
    const key = await json('key:create', 'pied-piper', 'richard@piedpiper.example');
    const pool = await json('pool:create', 'pied-piper', 'gpu-lab', 'Rack 2');
    expect(pool).toMatchObject({ name: 'gpu-lab', description: 'Rack 2' });
    const token = await json('pool:token:create', 'pied-piper', 'gpu-lab', 'rack 2');
    expect(token).toMatchObject({ poolId: pool.id, name: 'rack 2', revokedAt: null });
    expect(token.token).toMatch(/^wkt_[A-Za-z0-9_-]{43}$/);
    const listed = await json('pool:token:list', 'pied-piper', pool.id);
    expect(listed.map((x: { id: string }) => x.id)).toEqual([token.id]);
    expect(JSON.stringify(listed)).not.toContain(token.token);
    expect(JSON.stringify(await json('pool:list', 'pied-piper'))).toContain('gpu-lab');
    const revoked = await json('pool:token:revoke', 'pied-piper', 'gpu-lab', token.id);
    expect(revoked.revokedAt).toEqual(expect.any(String));

    const t = await startTestApp({}, database);
    try {
      const res = await t.http().get(`/api/v0/worker-pools/${pool.id}/enrollment-tokens`).set('Authorization', `Bearer ${key.key}`);
      expect(res.status).toBe(200);
      expect(res.body.enrollmentTokens).toEqual([expect.objectContaining({ id: token.id, createdBy: null, revokedAt: Date.parse(revoked.revokedAt) })]);
    } finally {
      await t.close();
    }
    // A bad name, an unknown pool: the operator is told, and nothing is made.
    expect((await cli('pool:create', 'pied-piper', 'GPU Lab')).stderr).toMatch(/not a valid pool name/);
    const unknown = await cli('pool:token:create', 'pied-piper', 'no-such-pool');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/No worker pool no-such-pool/);
  });

  it('creates a service account that computers may be created for, and a person they may not', async () => {
    await json('org:create', 'globex', 'Globex');
    const bot = await json('service-account:create', 'globex', 'ci@globex.example', 'CI');
    expect(bot).toMatchObject({ email: 'ci@globex.example', role: 'member', kind: 'service_account' });
    const person = await json('user:create', 'globex', 'hank@globex.example', 'Hank', 'owner');
    const key = await json('key:create', 'globex', 'hank@globex.example');
    const t = await startTestApp({}, database);
    try {
      const create = (serviceAccountId: string) =>
        t
          .http()
          .post('/api/v0/computers')
          .set('Authorization', `Bearer ${key.key}`)
          .send({ name: 'ci', provider: 'byom', hostId: '01a1fdca-0000-7000-8000-00000000000a', remoteUser: 'ci', serviceAccountId });
      const made = await create(bot.id);
      expect(made.status).toBe(201);
      expect(made.body).toMatchObject({ ownerId: bot.id, ownerPrincipalKind: 'service_account' });
      expect((await create(person.id)).body).toMatchObject({ status: 404, metadata: { code: 'service_account_not_found' } });
    } finally {
      await t.close();
    }
  });

  it('toggles an organization feature', async () => {
    await json('org:create', 'hooli', 'Hooli');
    expect(await json('feature:enable', 'hooli', 'message-history')).toEqual({ organization: 'hooli', feature: 'message-history', enabled: true });
    expect(await json('feature:disable', 'hooli', 'message-history')).toMatchObject({ enabled: false });
  });

  it.each([
    [['org:create', 'Bad Slug', 'x'], 64, /not a valid organization slug/],
    [['user:create', 'initech', 'not-an-email', 'X', 'owner'], 64, /not an email/],
    [['user:create', 'initech', 'x@initech.example', 'X', 'admin'], 64, /Unknown role/],
    [['service-account:create', 'initech', 'bot@initech.example', 'Bot', 'admin'], 64, /Unknown role/],
    [['service-account:create', 'initech', 'bot@initech.example'], 64, /Wrong number of arguments/],
    [['feature:enable', 'initech', 'teleport'], 64, /Unknown feature/],
    [['nonsense'], 64, /Unknown command/],
    [['org:create', 'initech', 'Initech again'], 1, /already exists/],
    [['user:create', 'nowhere', 'x@y.example', 'X', 'owner'], 1, /No organization with slug nowhere/],
    [['key:revoke', '01a1fdca-0000-7000-8000-000000000000'], 1, /No API key/],
  ])('%j exits %i with a clear message', async (args, code, message) => {
    const result = await cli(...(args as string[]));
    expect(result.code).toBe(code);
    expect(result.stderr).toMatch(message as RegExp);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 64 on a bad variable, naming it', async () => {
    const result = await runNode('dist/cli/main.js', ['org:list'], { ...database.env, JWT_JWKS_URL: 'keys.example.com/jwks.json' });
    expect(result.code).toBe(64);
    expect(result.stderr).toBe(
      'Invalid configuration:\n  JWT_JWKS_URL: JWT_JWKS_URL must be an http, https or ftp URL with a host (e.g. https://agents.example.com)\n',
    );
  });

  (serverUrl() ? it.skip : it)('refuses, changing nothing, while the server holds the PGlite data directory', async () => {
    const t = await startTestApp({}, database);
    try {
      const result = await cli('org:create', 'umbrella', 'Umbrella');
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/in use by another process \(pid \d+/);
      expect(result.stderr).toMatch(/did not answer on its operator socket. Stop it/);
      expect((await t.http().get('/healthz')).status).toBe(200);
    } finally {
      await t.close();
    }
    expect((await cli('user:create', 'umbrella', 'a@umbrella.example', 'A', 'owner')).stderr).toMatch(/No organization with slug umbrella/);
  });

  (serverUrl() ? it : it.skip)('works beside a running server on PostgreSQL', async () => {
    const t = await startTestApp({}, database);
    try {
      expect((await cli('org:create', 'umbrella', 'Umbrella')).code).toBe(0);
    } finally {
      await t.close();
    }
  });
});

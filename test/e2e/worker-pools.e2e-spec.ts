import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectInvalid, expectStatus, expectV0Error } from '../utils/v0-errors';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const POOLS = '/api/v0/worker-pools';
const POOL_LIMIT = 3;

/** Worker pools and their enrollment tokens, from the side of people who should not reach them as well as those who should. */
describe('Worker pools and enrollment tokens', () => {
  let t: TestApp;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let guest: TestUser;
  let stranger: TestUser;

  beforeAll(async () => {
    t = await startTestApp({ WORKER_POOLS_PER_ORGANIZATION: String(POOL_LIMIT) });
    const org = await createOrganization(t);
    owner = await createUser(t, Role.Owner, org);
    manager = await createUser(t, Role.Manager, org);
    member = await createUser(t, Role.Member, org);
    guest = await createUser(t, Role.Guest, org);
    stranger = await createUser(t, Role.Owner);
  });

  afterAll(() => t.close());

  const createPool = (user: TestUser, body: Json) => t.http().post(POOLS).set(user.auth).send(body);
  const poolsOf = async (user: TestUser): Promise<Json[]> => (await t.http().get(POOLS).query({ limit: '100' }).set(user.auth).expect(200)).body.workerPools;
  const db = () => t.app.get(DataSource);

  async function emptyPools(user: TestUser): Promise<void> {
    for (const pool of await poolsOf(user)) expectStatus(await t.http().delete(`${POOLS}/${pool.id}`).set(user.auth), 204);
  }

  describe('pools', () => {
    afterEach(() => emptyPools(owner));

    it('an owner creates, reads, renames and deletes a pool; a manager may too', async () => {
      const created = await createPool(owner, { name: 'gpu-lab', description: 'Rack 2' });
      expectStatus(created, 201);
      expect(created.body).toMatchObject({
        name: 'gpu-lab',
        description: 'Rack 2',
        createdBy: owner.userId,
      });
      const id = created.body.id as string;
      expect((await t.http().get(`${POOLS}/${id}`).set(manager.auth).expect(200)).body).toEqual(created.body);

      const renamed = await t.http().patch(`${POOLS}/${id}`).set(manager.auth).send({ name: 'gpu-lab-2', description: null });
      expectStatus(renamed, 200);
      expect(renamed.body).toMatchObject({ id, name: 'gpu-lab-2', description: null });
      expect(renamed.body.updatedAt).toBeGreaterThanOrEqual(created.body.updatedAt);

      expectStatus(await t.http().delete(`${POOLS}/${id}`).set(manager.auth), 204);
      expectV0Error(await t.http().get(`${POOLS}/${id}`).set(owner.auth), 404, 'worker_pool_not_found');
      expectV0Error(await t.http().delete(`${POOLS}/${id}`).set(owner.auth), 404, 'worker_pool_not_found');
    });

    it('names are unique in the organization, never a UUID, and follow the pattern; another organization may use the same name', async () => {
      expectStatus(await createPool(owner, { name: 'builders' }), 201);
      expectV0Error(await createPool(manager, { name: 'builders' }), 409, 'worker_pool_name_taken');
      expectStatus(await createPool(stranger, { name: 'builders' }), 201);
      expectInvalid(await createPool(owner, { name: randomUUID() }), 'name');
      for (const name of ['Builders', '-x', 'a b', 'x'.repeat(64), '', 42]) expectInvalid(await createPool(owner, { name }), 'name');
      expectInvalid(await createPool(owner, { name: 'ok', description: 'x'.repeat(501) }), 'description');
      expectInvalid(await createPool(owner, { name: 'ok', surprise: true }), 'surprise');

      const other = await createPool(owner, { name: 'other' });
      expectV0Error(await t.http().patch(`${POOLS}/${other.body.id}`).set(owner.auth).send({ name: 'builders' }), 409, 'worker_pool_name_taken');
      expectInvalid(await t.http().patch(`${POOLS}/${other.body.id}`).set(owner.auth).send({}), 'body');
      expect((await poolsOf(owner)).map((p) => p.name).sort()).toEqual(['builders', 'other']);
      await emptyPools(stranger);
    });

    it('members, guests and computer tokens are refused; nothing is stored', async () => {
      for (const user of [member, guest]) {
        expectV0Error(await createPool(user, { name: `by-${user.role}` }), 403, 'insufficient_role');
        expectV0Error(await t.http().get(POOLS).set(user.auth), 403, 'insufficient_role');
      }
      const computer = await t
        .http()
        .post('/api/v0/computers')
        .set(owner.auth)
        .send({ name: 'box', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
      expectStatus(computer, 201);
      const agent = { Authorization: `Bearer ${computer.body.agentToken}` };
      expectV0Error(await t.http().post(POOLS).set(agent).send({ name: 'by-agent' }), 403, 'computer_token_not_accepted');
      expect(await poolsOf(owner)).toEqual([]);
      expectStatus(await t.http().delete(`/api/v0/computers/${computer.body.id}`).set(owner.auth), 204);
    });

    it("another organization's pool is unknown: 404 on every route, and nothing changes", async () => {
      const pool = (await createPool(owner, { name: 'private' })).body as Json;
      const token = await t.http().post(`${POOLS}/${pool.id}/enrollment-tokens`).set(owner.auth).send({ name: 'rack' });
      expectStatus(token, 201);
      const as = stranger.auth;
      expectV0Error(await t.http().get(`${POOLS}/${pool.id}`).set(as), 404, 'worker_pool_not_found');
      expectV0Error(await t.http().patch(`${POOLS}/${pool.id}`).set(as).send({ name: 'mine' }), 404, 'worker_pool_not_found');
      expectV0Error(await t.http().delete(`${POOLS}/${pool.id}`).set(as), 404, 'worker_pool_not_found');
      expectV0Error(await t.http().post(`${POOLS}/${pool.id}/enrollment-tokens`).set(as).send({ name: 'mine' }), 404, 'worker_pool_not_found');
      expectV0Error(await t.http().get(`${POOLS}/${pool.id}/enrollment-tokens`).set(as), 404, 'worker_pool_not_found');
      expectV0Error(await t.http().delete(`${POOLS}/${pool.id}/enrollment-tokens/${token.body.id}`).set(as), 404, 'worker_pool_not_found');
      // Its own pool with the other's token id: the token is not in that pool.
      const own = (await createPool(stranger, { name: 'own' })).body as Json;
      expectV0Error(await t.http().delete(`${POOLS}/${own.id}/enrollment-tokens/${token.body.id}`).set(as), 404, 'enrollment_token_not_found');
      expectV0Error(await t.http().get(`${POOLS}/not-a-uuid`).set(as), 404, 'worker_pool_not_found');

      expect((await t.http().get(`${POOLS}/${pool.id}`).set(owner.auth).expect(200)).body).toEqual(pool);
      const tokens = (await t.http().get(`${POOLS}/${pool.id}/enrollment-tokens`).set(owner.auth).expect(200)).body.enrollmentTokens as Json[];
      expect(tokens.map((x) => [x.id, x.revokedAt])).toEqual([[token.body.id, null]]);
      await emptyPools(stranger);
    });

    it('an organization has at most WORKER_POOLS_PER_ORGANIZATION pools, even when creates race for the last one', async () => {
      for (let i = 0; i < POOL_LIMIT - 1; i++) expectStatus(await createPool(owner, { name: `p${i}` }), 201);
      const racing = await Promise.all(Array.from({ length: 4 }, (_, i) => createPool(owner, { name: `race${i}` })));
      expect(racing.map((res) => res.status).sort()).toEqual([201, 409, 409, 409]);
      for (const refused of racing.filter((res) => res.status === 409)) {
        expect(refused.body.metadata).toEqual({ code: 'quota_exceeded', quota: 'WORKER_POOLS_PER_ORGANIZATION', limit: POOL_LIMIT });
      }
      expect(await poolsOf(owner)).toHaveLength(POOL_LIMIT);
      // Another organization has its own count.
      expectStatus(await createPool(stranger, { name: 'theirs' }), 201);
      await emptyPools(stranger);
    });

    it('the list pages newest first', async () => {
      const names = ['a', 'b', 'c'];
      for (const name of names) expectStatus(await createPool(owner, { name }), 201);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await t
          .http()
          .get(POOLS)
          .query({ limit: '1', ...(cursor ? { cursor } : {}) })
          .set(owner.auth)
          .expect(200);
        seen.push(...(res.body.workerPools as Json[]).map((p) => p.name as string));
        cursor = res.body.pagination.nextCursor as string | null;
      } while (cursor);
      expect(seen).toEqual(['c', 'b', 'a']);
    });
  });

  describe('enrollment tokens', () => {
    let pool: Json;

    beforeAll(async () => {
      pool = (await createPool(owner, { name: 'tokens' })).body as Json;
    });

    afterAll(() => emptyPools(owner));

    const tokens = (id = pool.id as string) => `${POOLS}/${id}/enrollment-tokens`;

    it('is shown once, kept only as a hash, listed by its prefix, and never in an event', async () => {
      const created = await t.http().post(tokens()).set(manager.auth).send({ name: 'rack 2', expiresAt: '2099-01-01T00:00:00Z' });
      expectStatus(created, 201);
      const token = created.body.token as string;
      expect(token).toMatch(/^wkt_[A-Za-z0-9_-]{43}$/);
      expect(created.body).toMatchObject({ poolId: pool.id, name: 'rack 2', prefix: token.slice(0, 12), createdBy: manager.userId, revokedAt: null });
      expect(created.body.expiresAt).toBe(Date.parse('2099-01-01T00:00:00Z'));

      const listed = (await t.http().get(tokens()).set(owner.auth).expect(200)).body.enrollmentTokens as Json[];
      const view = { ...(created.body as Json) };
      delete view.token;
      expect(listed).toEqual([view]);
      expect(JSON.stringify(listed)).not.toContain(token);

      const [row] = (await db().query('SELECT * FROM worker_enrollment_tokens WHERE id = $1', [created.body.id])) as Json[];
      expect(JSON.stringify(row)).not.toContain(token.slice(4));
      expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);

      const events = (await t.http().get('/api/v0/events').query({ after: '0', limit: '100' }).set(owner.auth).expect(200)).body.events as Json[];
      const created_ = events.find((e) => e.type === 'enrollment_token.created' && e.data.tokenId === created.body.id);
      expect(created_).toMatchObject({ data: { poolId: pool.id, name: 'rack 2', prefix: view.prefix } });
      expect(JSON.stringify(events)).not.toContain(token.slice(4));
      // Members do not see pool events.
      const seenByMember = (await t.http().get('/api/v0/events').query({ after: '0', limit: '100' }).set(member.auth).expect(200)).body.events as Json[];
      expect(seenByMember.filter((e) => /^(worker_pool|enrollment_token)\./.test(e.type as string))).toEqual([]);
    });

    it('revoking marks it once; revoking again is harmless; a past expiry is refused', async () => {
      const created = (await t.http().post(tokens()).set(owner.auth).send({ name: 'short' }).expect(201)).body as Json;
      const revoked = await t.http().delete(`${tokens()}/${created.id}`).set(owner.auth);
      expectStatus(revoked, 200);
      expect(revoked.body.revokedAt).toEqual(expect.any(Number));
      const again = await t.http().delete(`${tokens()}/${created.id}`).set(owner.auth);
      expect(again.body.revokedAt).toBe(revoked.body.revokedAt);
      const revocations = (await db().query(`SELECT count(*)::int AS n FROM events WHERE type = 'enrollment_token.revoked' AND data->>'tokenId' = $1`, [
        created.id,
      ])) as Array<{ n: number }>;
      expect(revocations[0].n).toBe(1);

      expectInvalid(await t.http().post(tokens()).set(owner.auth).send({ name: 'old', expiresAt: '2001-01-01T00:00:00Z' }), 'expiresAt');
      expectInvalid(await t.http().post(tokens()).set(owner.auth).send({ name: '' }), 'name');
      expectV0Error(await t.http().delete(`${tokens()}/${randomUUID()}`).set(owner.auth), 404, 'enrollment_token_not_found');
      expectV0Error(await t.http().post(tokens()).set(member.auth).send({ name: 'mine' }), 403, 'insufficient_role');
    });

    it('a pool has at most 20 tokens that still work; a revoked one frees its place', async () => {
      const own = (await createPool(owner, { name: 'many-tokens' })).body as Json;
      const made = await Promise.all(
        Array.from({ length: 22 }, (_, i) =>
          t
            .http()
            .post(tokens(own.id))
            .set(owner.auth)
            .send({ name: `t${i}` }),
        ),
      );
      expect(made.filter((res) => res.status === 201)).toHaveLength(20);
      for (const refused of made.filter((res) => res.status !== 201)) expectV0Error(refused, 409, 'too_many_enrollment_tokens');
      const first = made.find((res) => res.status === 201)!;
      expectStatus(
        await t
          .http()
          .delete(`${tokens(own.id)}/${first.body.id}`)
          .set(owner.auth),
        200,
      );
      expectStatus(await t.http().post(tokens(own.id)).set(owner.auth).send({ name: 'replacement' }), 201);
      expectV0Error(await t.http().post(tokens(own.id)).set(owner.auth).send({ name: 'one more' }), 409, 'too_many_enrollment_tokens');
    });

    it('deleting the pool deletes its tokens', async () => {
      const own = (await createPool(owner, { name: 'short-lived' })).body as Json;
      expectStatus(await t.http().post(tokens(own.id)).set(owner.auth).send({ name: 'gone' }), 201);
      expectStatus(await t.http().delete(`${POOLS}/${own.id}`).set(owner.auth), 204);
      const left = (await db().query('SELECT count(*)::int AS n FROM worker_enrollment_tokens WHERE pool_id = $1', [own.id])) as Array<{ n: number }>;
      expect(left[0].n).toBe(0);
    });
  });
});

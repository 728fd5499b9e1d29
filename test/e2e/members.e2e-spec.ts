import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectInvalid, expectV0Error } from '../utils/v0-errors';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;
type Auth = { Authorization: string };

const MEMBERS = '/api/v0/organization/members';
const JWT_SECRET = 'a-test-secret-that-is-long-enough-for-hs256!';

/**
 * The members API, tried by each role: who may list, add, change and remove whom; an organization
 * always keeps an owner; a removed user's every credential stops at once, and what they made stays.
 */
describe('Members (e2e)', () => {
  let t: TestApp;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let guest: TestUser;

  beforeAll(async () => {
    // No credential cache: a removal must be visible on the very next request.
    t = await startTestApp({ AUTH_CACHE_MS: '0', JWT_SECRET });
    owner = await createUser(t, Role.Owner);
    const org = { id: owner.organizationId, slug: owner.organizationSlug };
    manager = await createUser(t, Role.Manager, org);
    member = await createUser(t, Role.Member, org);
    guest = await createUser(t, Role.Guest, org);
  });

  afterAll(() => t?.close());

  const add = (by: Auth, body: Json) => t.http().post(MEMBERS).set(by).send(body);
  const change = (by: Auth, id: string, body: Json) => t.http().patch(`${MEMBERS}/${id}`).set(by).send(body);
  const remove = (by: Auth, id: string) => t.http().delete(`${MEMBERS}/${id}`).set(by);
  const email = () => `u-${randomUUID().slice(0, 8)}@example.test`;

  it('is for owners and managers: members and guests get 403 on every route', async () => {
    for (const user of [member, guest]) {
      expectV0Error(await t.http().get(MEMBERS).set(user.auth), 403, 'insufficient_role');
      expectV0Error(await add(user.auth, { email: email(), name: 'X', role: 'guest' }), 403, 'insufficient_role');
      expectV0Error(await change(user.auth, guest.userId, { role: 'member' }), 403, 'insufficient_role');
      expectV0Error(await remove(user.auth, guest.userId), 403, 'insufficient_role');
    }
    const list = await t.http().get(MEMBERS).set(manager.auth).expect(200);
    expect((list.body.members as Json[]).map((m) => m.id)).toEqual(expect.arrayContaining([owner.userId, manager.userId, member.userId, guest.userId]));
    expect(list.body.members[0]).toEqual({
      id: expect.any(String),
      email: expect.any(String),
      name: expect.any(String),
      role: expect.any(String),
      kind: 'human',
      createdAt: expect.any(Number),
    });
  });

  it("adds people and service accounts up to one's own role, and validates what it is sent", async () => {
    const added = await add(manager.auth, { email: email().toUpperCase(), name: 'New Manager', role: 'manager' }).expect(201);
    expect(added.body).toMatchObject({ role: 'manager', kind: 'human', email: expect.stringMatching(/^[a-z0-9@.-]+$/) });
    expectV0Error(await add(manager.auth, { email: email(), name: 'Would-be owner', role: 'owner' }), 403, 'role_above_yours');
    expectV0Error(await add(owner.auth, { email: added.body.email, name: 'Again', role: 'member' }), 409, 'user_exists');
    expectInvalid(await add(owner.auth, { email: 'not-an-email', name: 'X', role: 'member' }), 'email');
    expectInvalid(await add(owner.auth, { email: email(), name: 'X', role: 'admin' }), 'role');
    expectInvalid(await add(owner.auth, { email: email(), name: 'line\nbreak', role: 'member' }), 'name');
    expectInvalid(await add(owner.auth, { email: email(), name: '   ', role: 'member' }), 'name');
    expectInvalid(
      await t
        .http()
        .patch(`${MEMBERS}/${added.body.id as string}`)
        .set(owner.auth)
        .send({ name: ' ' }),
      'name',
    );
    expectInvalid(await add(owner.auth, { email: email(), name: 'X', role: 'member', isAdmin: true }), 'isAdmin');

    const bot = await add(owner.auth, { email: email(), name: 'CI bot', role: 'member', kind: 'service_account' }).expect(201);
    const bots = await t.http().get(MEMBERS).query({ kind: 'service_account' }).set(owner.auth).expect(200);
    expect((bots.body.members as Json[]).map((m) => m.id)).toEqual([bot.body.id]);
    // The service account gets keys from an admin, and acts with its own role.
    const key = await t
      .http()
      .post(`${MEMBERS}/${bot.body.id as string}/api-keys`)
      .set(manager.auth)
      .send({ name: 'ci' })
      .expect(201);
    const asBot = { Authorization: `Bearer ${key.body.key as string}` };
    expect(key.body.userId).toBe(bot.body.id);
    expectV0Error(await t.http().get(MEMBERS).set(asBot), 403, 'insufficient_role');
    await t.http().get('/api/v0/sessions').set(asBot).expect(200);
    // People make their own keys; a computer may be created for the service account.
    expectV0Error(await t.http().post(`${MEMBERS}/${member.userId}/api-keys`).set(owner.auth).send({ name: 'x' }), 404, 'service_account_not_found');
    await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: 'ci', provider: 'byom', hostId: randomUUID(), remoteUser: 'ci', serviceAccountId: bot.body.id })
      .expect(201);
  });

  it("changes roles only up to one's own, never a higher member, and never away from the last owner", async () => {
    const target = await add(owner.auth, { email: email(), name: 'Target', role: 'guest' }).expect(201);
    await change(manager.auth, target.body.id, { role: 'manager', name: 'Promoted' }).expect(200);
    expectV0Error(await change(manager.auth, target.body.id, { role: 'owner' }), 403, 'role_above_yours');
    expectV0Error(await change(manager.auth, owner.userId, { role: 'member' }), 403, 'role_above_yours');
    expectV0Error(await change(owner.auth, randomUUID(), { role: 'member' }), 404, 'user_not_found');
    expectInvalid(await change(owner.auth, target.body.id, {}), 'body');
    // The new role applies to the member's next request.
    const promoted = await t.http().get(MEMBERS).set(owner.auth).expect(200);
    expect((promoted.body.members as Json[]).find((m) => m.id === target.body.id)).toMatchObject({ role: 'manager', name: 'Promoted' });

    // A new organization with one owner: that owner cannot step down, until there is another.
    const solo = await createUser(t, Role.Owner);
    expectV0Error(await change(solo.auth, solo.userId, { role: 'manager' }), 409, 'last_owner');
    expectV0Error(await remove(solo.auth, solo.userId), 409, 'last_owner');
    const second = await t.http().post(MEMBERS).set(solo.auth).send({ email: email(), name: 'Second owner', role: 'owner' }).expect(201);
    await change(solo.auth, solo.userId, { role: 'manager' }).expect(200);
    expectV0Error(
      await t
        .http()
        .patch(`${MEMBERS}/${second.body.id as string}`)
        .set(solo.auth)
        .send({ role: 'member' }),
      403,
      'role_above_yours',
    );
  });

  it('keeps an owner when two owners remove each other at once', async () => {
    const first = await createUser(t, Role.Owner);
    const second = await createUser(t, Role.Owner, { id: first.organizationId, slug: first.organizationSlug });
    const results = await Promise.all([remove(first.auth, second.userId), remove(second.auth, first.userId)]);
    const statuses = results.map((res) => res.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    // The other found the last owner (409), or had been removed already (401).
    expect([401, 409]).toContain(statuses.find((status) => status !== 200));
    const survivor = statuses[0] === 200 ? first : second;
    const left = (await t.http().get(MEMBERS).set(survivor.auth).expect(200)).body.members as Json[];
    expect(left.map((m) => [m.id, m.role])).toEqual([[survivor.userId, 'owner']]);
  });

  it('removes a member: every credential of theirs stops at once, what they made stays, and adding the address again brings them back', async () => {
    const leaver = await createUser(t, Role.Member, { id: owner.organizationId, slug: owner.organizationSlug });
    const session = await t.http().post('/api/v0/sessions').set(leaver.auth).send({}).expect(201);
    const computer = await t
      .http()
      .post('/api/v0/computers')
      .set(leaver.auth)
      .send({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' })
      .expect(201);
    const agent = { Authorization: `Bearer ${computer.body.agentToken as string}` };
    const jwt = await new SignJWT({ org_id: leaver.organizationId })
      .setSubject(leaver.userId)
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(JWT_SECRET));
    for (const auth of [leaver.auth, agent, { Authorization: `Bearer ${jwt}` }])
      await t
        .http()
        .get(auth === agent ? '/api/v0/agent/policy' : '/api/v0/sessions')
        .set(auth)
        .expect(200);

    expectV0Error(await remove(manager.auth, owner.userId), 403, 'role_above_yours');
    const removed = await remove(manager.auth, leaver.userId).expect(200);
    expect(removed.body).toMatchObject({ id: leaver.userId, removedAt: expect.any(Number) });
    expectV0Error(await t.http().get('/api/v0/sessions').set(leaver.auth), 401, 'revoked_api_key');
    expect((await t.http().get('/api/v0/agent/policy').set(agent)).status).toBe(401);
    expect(
      (
        await t
          .http()
          .get('/api/v0/sessions')
          .set({ Authorization: `Bearer ${jwt}` })
      ).status,
    ).toBe(401);
    expectV0Error(await remove(owner.auth, leaver.userId), 404, 'user_not_found');
    expect(((await t.http().get(MEMBERS).set(owner.auth).expect(200)).body.members as Json[]).map((m) => m.id)).not.toContain(leaver.userId);

    // Their session is still there for the organization.
    await t
      .http()
      .get(`/api/v0/sessions/${session.body.sessionId as string}`)
      .set(owner.auth)
      .expect(200);

    // Back with the same id and a new role; the old key stays revoked.
    const back = await add(owner.auth, { email: leaver.email, name: 'Returned', role: 'guest' }).expect(201);
    expect(back.body).toMatchObject({ id: leaver.userId, role: 'guest', name: 'Returned' });
    expectV0Error(await t.http().get('/api/v0/sessions').set(leaver.auth), 401, 'revoked_api_key');
  });

  it("answers another organization's user as unknown", async () => {
    const stranger = await createUser(t, Role.Member);
    expectV0Error(await change(owner.auth, stranger.userId, { role: 'guest' }), 404, 'user_not_found');
    expectV0Error(await remove(owner.auth, stranger.userId), 404, 'user_not_found');
    expectV0Error(await t.http().post(`${MEMBERS}/${stranger.userId}/api-keys`).set(owner.auth).send({ name: 'x' }), 404, 'service_account_not_found');
    await t.http().get('/api/v0/sessions').set(stranger.auth).expect(200);
  });
});

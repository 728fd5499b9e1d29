import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { ValidateFunction } from 'ajv';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { expectStatus, expectV0Error } from '../utils/v0-errors';
import { TestApp } from '../utils/test-app';
import { byomBody, COMPUTERS, computersInputFixture, expectInvalid, Json, localBody, UUID } from '../utils/fixtures/computers-input';

/** The v0 computers API's responses, updates, retries and ids, and what each role may do to whose computer. */

/** Fields the create (and get) response adds to the list shape. */
const CREATE_ONLY = ['hostId', 'clonedRepoDirectories', 'ownerId', 'ownerPrincipalKind', 'computerSource', 'agentToken'];

describe('Computers API (v0): input, roles and limits', () => {
  const fixture = computersInputFixture();
  const { http, post, expectValid, create, get, list, routesOn } = fixture;
  let t: TestApp;
  let validateComputer: ValidateFunction;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let member2: TestUser;
  let guest: TestUser;
  let outsider: TestUser;
  let bot: TestUser;
  let outsiderBot: TestUser;
  beforeAll(() => ({ t, validateComputer, owner, manager, member, member2, guest, outsider, bot, outsiderBot } = fixture));

  // --- response shapes -------------------------------------------------------------------------

  describe('responses', () => {
    it('the create response carries the additions, the agent token and the relay URLs', async () => {
      const body = byomBody();
      const computer = await create(owner, body);
      expect(computer).toEqual({
        id: expect.stringMatching(UUID),
        name: 'laptop',
        providerType: 'byom',
        createdAt: expect.any(Number),
        hostId: body.hostId,
        status: 'active',
        relayClientUrl: `${t.config.baseUrl}/api/v0/sessions?computerId=${computer.id}`,
        relayAgentUrl: `${t.config.baseUrl}/api/v0/agent`,
        remoteUser: 'dev',
        clonedRepoDirectories: [],
        ownerPrincipalKind: 'user',
        ownerId: owner.userId,
        agentToken: expect.stringMatching(/^cpt_/),
      });
      expect(Math.abs(computer.createdAt - Date.now())).toBeLessThan(60_000);
    });

    it('GET answers every field but never the agent token', async () => {
      const created = await create(owner, localBody({ source: { kind: 'template', templateId: 'blank' } }));
      const { agentToken, ...rest } = created;
      expect(agentToken).toMatch(/^cpt_/);
      const fetched = await get(owner, created.id);
      expect(fetched).toEqual(rest);
      expect(JSON.stringify(fetched)).not.toContain(agentToken);
      expect(JSON.stringify(await list(owner))).not.toContain(agentToken);
    });

    it('the list is {computers} newest first, in the list shape', async () => {
      const org = await createOrganization(t);
      const admin = await createUser(t, Role.Owner, org);
      expect(await list(admin)).toEqual([]);
      const first = await create(admin, byomBody({ name: 'first' }));
      const second = await create(admin, localBody({ name: 'second' }));
      const third = await create(admin, byomBody({ name: 'third' }));
      const res = await http().get(COMPUTERS).set(admin.auth).expect(200);
      expect(Object.keys(res.body)).toEqual(['computers']);
      const computers = res.body.computers as Json[];
      expect(computers.map((c) => c.id)).toEqual([third.id, second.id, first.id]);
      for (const computer of computers) {
        expectValid(validateComputer, computer);
        for (const field of [...CREATE_ONLY, 'hostname']) expect(computer).not.toHaveProperty(field);
      }
      const listedSecond = computers[1];
      expect(listedSecond).toMatchObject({ name: 'second', providerType: 'local', status: 'provisioning', remoteUser: userInfo().username });
      // Steps in the list shape carry no installSessionId.
      expect(listedSecond.provisioningSteps).toEqual([{ id: 'create-computer', name: expect.any(String), status: 'pending' }]);
    });

    it('the update response is the list shape; hostname appears once the agent connects', async () => {
      const created = await create(owner, byomBody());
      const renamed = await http().patch(`${COMPUTERS}/${created.id}`).set(owner.auth).send({ name: 'renamed' });
      expectStatus(renamed, 200);
      expectValid(validateComputer, renamed.body);
      expect(renamed.body).toMatchObject({ id: created.id, name: 'renamed', providerType: 'byom', status: 'active', remoteUser: 'dev' });
      for (const field of [...CREATE_ONLY, 'hostname']) expect(renamed.body).not.toHaveProperty(field);

      const connect = await http()
        .post('/api/v0/agent/connect')
        .set({ Authorization: `Bearer ${created.agentToken}` })
        .send({ hostname: 'build-box-1' });
      expectStatus(connect, 200);

      const again = await http().patch(`${COMPUTERS}/${created.id}`).set(owner.auth).send({ remoteUser: 'ops' });
      expectStatus(again, 200);
      expectValid(validateComputer, again.body);
      expect(again.body).toMatchObject({ name: 'renamed', remoteUser: 'ops', hostname: 'build-box-1' });
      for (const field of CREATE_ONLY) expect(again.body).not.toHaveProperty(field);
      expect((await list(owner)).find((c) => c.id === created.id)).toMatchObject({ hostname: 'build-box-1' });
      expect(await get(owner, created.id)).toMatchObject({ hostname: 'build-box-1', hostId: created.hostId, ownerId: owner.userId });
    });

    it('the agent token is no API key: 403 on the computers routes', async () => {
      const created = await create(owner, byomBody());
      const res = await http()
        .get(COMPUTERS)
        .set({ Authorization: `Bearer ${created.agentToken}` });
      expectV0Error(res, 403, 'computer_token_not_accepted');
    });
  });

  // --- update ----------------------------------------------------------------------------------

  describe('update', () => {
    let computer: Json;
    beforeAll(async () => {
      computer = await create(owner, byomBody({ name: 'to-update', remoteUser: 'keeper' }));
    });
    const patch = (body: unknown, id = computer.id as string, user = owner) =>
      http()
        .patch(`${COMPUTERS}/${id}`)
        .set(user.auth)
        .send(body as object);

    it('an empty body: 400', async () => {
      expectV0Error(await patch({}), 400, 'validation_failed');
    });

    it('no body at all: 400', async () => {
      const res = await http().patch(`${COMPUTERS}/${computer.id}`).set(owner.auth);
      expectStatus(res, 400);
    });

    it.each([
      ['an unknown field', { name: 'x', color: 'red' }, 'color'],
      ['a field only create takes', { provider: 'local' }, 'provider'],
      ['hostId', { hostId: randomUUID() }, 'hostId'],
      ['repos', { repos: [] }, 'repos'],
      ['a null name', { name: null }, 'name'],
      ['a numeric name', { name: 5 }, 'name'],
      ['a blank name', { name: '  ' }, 'name'],
      ['a name with a newline', { name: 'a\nb' }, 'name'],
      ['a name with NUL', { name: 'a\u0000b' }, 'name'],
      ['a remoteUser that is no user name', { remoteUser: '-rf' }, 'remoteUser'],
      ['a null remoteUser', { remoteUser: null }, 'remoteUser'],
    ])('%s: 400 naming it', async (_, body, field) => {
      expectInvalid(await patch(body), field);
      expect(await get(owner, computer.id)).toMatchObject({ name: 'to-update', remoteUser: 'keeper' });
    });

    it('changing only the name keeps remoteUser, and only remoteUser keeps the name', async () => {
      const c = await create(owner, byomBody({ name: 'both', remoteUser: 'first' }));
      expect((await patch({ name: 'renamed' }, c.id)).body).toMatchObject({ name: 'renamed', remoteUser: 'first' });
      expect((await patch({ remoteUser: 'second' }, c.id)).body).toMatchObject({ name: 'renamed', remoteUser: 'second' });
      expect((await patch({ name: 'both-again', remoteUser: 'third' }, c.id)).body).toMatchObject({ name: 'both-again', remoteUser: 'third' });
      expect(await get(owner, c.id)).toMatchObject({ name: 'both-again', remoteUser: 'third' });
    });

    it("another organization's computer: 404 computer_not_found, unchanged", async () => {
      const theirs = await create(outsider, byomBody({ name: 'theirs' }));
      expectV0Error(await patch({ name: 'mine now' }, theirs.id), 404, 'computer_not_found');
      expect((await get(outsider, theirs.id)).name).toBe('theirs');
    });

    it.each([['not-a-uuid'], ['0b9a4c1e3f554d439d3a2f8a7f1f0b11'], ['%20'], [randomUUID()]])('a malformed or unknown id (%s): 404', async (id) => {
      expectV0Error(await patch({ name: 'x' }, id), 404, 'computer_not_found');
    });

    it('a bad body is 400 before the id is looked up', async () => {
      expectV0Error(await patch({}, randomUUID()), 400, 'validation_failed');
    });
  });

  describe('malformed or unknown ids', () => {
    it.each([['not-a-uuid'], ['1'], [randomUUID()]])('every route answers 404 computer_not_found for %s', async (id) => {
      for (const [label, send] of routesOn(id)) {
        const res = await send().set(owner.auth);
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 404, code: 'computer_not_found' });
      }
    });
  });

  // --- roles -----------------------------------------------------------------------------------

  describe('roles', () => {
    it('guests are 403 insufficient_role on every route, list included', async () => {
      const computer = await create(owner, byomBody());
      const requests = [
        ['GET list', () => http().get(COMPUTERS)],
        ['POST create', () => http().post(COMPUTERS).send(byomBody())],
        ['POST create (invalid body)', () => http().post(COMPUTERS).send({})],
        ...routesOn(computer.id),
        ['GET unknown id', () => http().get(`${COMPUTERS}/${randomUUID()}`)],
      ] as const;
      for (const [label, send] of requests) {
        const res = await send().set(guest.auth);
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 403, code: 'insufficient_role' });
        expectV0Error(res, 403, 'insufficient_role');
      }
      expect((await get(owner, computer.id)).name).toBe('laptop');
    });

    it("a member cannot see or change another member's computer: 404 on every route, absent from their list", async () => {
      const theirs = await create(member2, byomBody({ name: 'member2s' }));
      for (const [label, send] of routesOn(theirs.id)) {
        const res = await send().set(member.auth);
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 404, code: 'computer_not_found' });
      }
      expect((await list(member)).map((c) => c.id)).not.toContain(theirs.id);
      // Still there, unchanged, for its owner.
      expect(await get(member2, theirs.id)).toMatchObject({ name: 'member2s' });
    });

    it('a member sees and changes their own computers only', async () => {
      const org = await createOrganization(t);
      const [admin, a, b] = await Promise.all([createUser(t, Role.Owner, org), createUser(t, Role.Member, org), createUser(t, Role.Member, org)]);
      const adminsOwn = await create(admin, byomBody());
      const mine = await create(a, byomBody({ name: 'mine' }));
      const theirs = await create(b, localBody({ name: 'theirs' }));
      expect((await list(a)).map((c) => c.id)).toEqual([mine.id]);
      expect((await list(b)).map((c) => c.id)).toEqual([theirs.id]);
      expect((await http().patch(`${COMPUTERS}/${mine.id}`).set(a.auth).send({ name: 'mine2' })).status).toBe(200);
      expect((await http().post(`${COMPUTERS}/${mine.id}/agent-token`).set(a.auth)).status).toBe(200);
      expect((await http().get(`${COMPUTERS}/${adminsOwn.id}`).set(a.auth)).status).toBe(404);
      expect((await http().delete(`${COMPUTERS}/${mine.id}`).set(a.auth)).status).toBe(204);
      expect(await list(a)).toEqual([]);
    });

    it('owners and managers see and change every computer of the organization', async () => {
      const org = await createOrganization(t);
      const [own, mgr, a, b] = await Promise.all([Role.Owner, Role.Manager, Role.Member, Role.Member].map((role) => createUser(t, role, org)));
      const computers = [await create(a, byomBody()), await create(b, localBody()), await create(own, byomBody()), await create(mgr, byomBody())];
      const ids = computers.map((c) => c.id).reverse();
      for (const admin of [own, mgr]) {
        expect((await list(admin)).map((c) => c.id)).toEqual(ids);
        expect((await get(admin, computers[0].id)).ownerId).toBe(a.userId);
      }
      expect((await http().patch(`${COMPUTERS}/${computers[0].id}`).set(mgr.auth).send({ name: 'by manager' })).status).toBe(200);
      expect((await http().post(`${COMPUTERS}/${computers[1].id}/agent-token`).set(own.auth)).status).toBe(200);
      expect((await http().delete(`${COMPUTERS}/${computers[1].id}`).set(mgr.auth)).status).toBe(204);
      expect((await get(a, computers[0].id)).name).toBe('by manager');
      expect(await list(b)).toEqual([]);
    });

    it("another organization's computer is 404 on every route, even to an owner, and absent from the list", async () => {
      const theirs = await create(outsider, byomBody({ name: 'outsiders' }));
      for (const [label, send] of routesOn(theirs.id)) {
        const res = await send().set(owner.auth);
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 404, code: 'computer_not_found' });
        expect(JSON.stringify(res.body)).not.toContain(outsider.userId);
      }
      expect((await list(owner)).map((c) => c.id)).not.toContain(theirs.id);
      expect(await get(outsider, theirs.id)).toMatchObject({ name: 'outsiders' });
    });

    describe('serviceAccountId', () => {
      it('from a member: 403 read_only_role', async () => {
        expectV0Error(await post(member, byomBody({ serviceAccountId: bot.userId })), 403, 'read_only_role');
        expectV0Error(await post(member, byomBody({ serviceAccountId: member.userId })), 403, 'read_only_role');
      });

      it.each([
        ['an owner', () => owner],
        ['a manager', () => manager],
      ])('from %s with a service account of the organization: 201, owned by that service account', async (_, who) => {
        const computer = await create(who(), localBody({ serviceAccountId: bot.userId.toUpperCase() }));
        expect(computer).toMatchObject({ ownerPrincipalKind: 'service_account', ownerId: bot.userId });
        expect(await get(owner, computer.id)).toMatchObject({ ownerPrincipalKind: 'service_account', ownerId: bot.userId });
        // It belongs to the service account: the service account's own key sees it.
        expect((await list(bot)).map((c) => c.id)).toContain(computer.id);
      });

      it.each([
        ['an unknown UUID', () => randomUUID()],
        ['a person of the organization (a member)', () => member2.userId],
        ['a person of the organization (the caller)', () => owner.userId],
        ['a person of the organization (a manager)', () => manager.userId],
        ['a user of another organization', () => outsider.userId],
        ['a service account of another organization', () => outsiderBot.userId],
        ['a malformed id', () => 'not-a-uuid'],
      ])('%s: 404 service_account_not_found, nothing created', async (_, id) => {
        const before = (await list(owner)).length;
        const res = await post(owner, byomBody({ serviceAccountId: id() }));
        expectV0Error(res, 404, 'service_account_not_found');
        expect(res.body.metadata.field).toBe('serviceAccountId');
        expect((await list(owner)).length).toBe(before);
      });
    });
  });

  // --- retry -----------------------------------------------------------------------------------

  describe('retry', () => {
    it('an active computer: 409 computer_not_failed with its status', async () => {
      const computer = await create(owner, byomBody());
      const res = await http().post(`${COMPUTERS}/${computer.id}/retry`).set(owner.auth);
      expectV0Error(res, 409, 'computer_not_failed');
      expect(res.body.metadata.computerStatus).toBe('active');
    });

    it('a provisioning computer: 409 computer_not_failed with its status', async () => {
      const computer = await create(member, localBody());
      const res = await http().post(`${COMPUTERS}/${computer.id}/retry`).set(member.auth);
      expectV0Error(res, 409, 'computer_not_failed');
      expect(res.body.metadata.computerStatus).toBe('provisioning');
      expect((await get(member, computer.id)).status).toBe('provisioning');
    });
  });
});

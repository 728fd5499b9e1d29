import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser } from '../utils/factories';
import { expectV0Error } from '../utils/v0-errors';
import { startTestApp, TestApp } from '../utils/test-app';
import { bearer, Body, computerAgentsFixture, helpers } from '../utils/fixtures/computer-agents';

/** A computer's agent token over real HTTP: what it is, its rotation, a deleted computer's token, and the credential cache. */

const TOKEN_SHAPE = /^cpt_[A-Za-z0-9_-]{43}$/;
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('Computer agents', () => {
  const fixture = computerAgentsFixture();
  const { api, http } = fixture;
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

  describe('the agent token', () => {
    it('is shown once, in the create response, and stored only as its SHA-256 hash', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      expect(computer.agentToken).toMatch(TOKEN_SHAPE);

      const got = await http().get(`/api/v0/computers/${computer.id}`).set(owner.auth).expect(200);
      expect(got.body.id).toBe(computer.id);
      expect(got.body).not.toHaveProperty('agentToken');
      expect(JSON.stringify(got.body)).not.toContain(computer.agentToken);
      const list = await http().get('/api/v0/computers').set(owner.auth).expect(200);
      const listed = (list.body.computers as Body[]).find((c) => c.id === computer.id);
      expect(listed).toBeDefined();
      expect(listed).not.toHaveProperty('agentToken');
      expect(JSON.stringify(list.body)).not.toContain(computer.agentToken);

      const db = t.app.get(DataSource);
      const [row] = (await db.query(`SELECT agent_token_hash, row_to_json(c)::text AS everything FROM computers c WHERE id = $1`, [computer.id])) as Array<{
        agent_token_hash: string;
        everything: string;
      }>;
      expect(row.agent_token_hash).toBe(sha256(computer.agentToken));
      expect(row.everything).not.toContain(computer.agentToken);
      // Not even the random part without its prefix.
      expect(row.everything).not.toContain(computer.agentToken.slice(4));
    });

    it('gives each computer a token of its own', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      const second = await api.createComputer(owner, 'desktop');
      expect(second.agentToken).toMatch(TOKEN_SHAPE);
      expect(second.agentToken).not.toBe(computer.agentToken);
    });

    it('works on the agent channel and nowhere else (403 computer_token_not_accepted)', async () => {
      const { computer } = await api.ownerWithComputer();
      const claimed = await api.claimRaw(computer.auth);
      expect(claimed.status).toBe(200);
      expect(claimed.body).toEqual({ work: null });

      const elsewhere: Array<[string, Response]> = [
        ['GET /api/v0/sessions', await http().get('/api/v0/sessions').set(computer.auth)],
        ['POST /api/v0/sessions', await http().post('/api/v0/sessions').set(computer.auth).send({})],
        ['GET /api/v0/computers', await http().get('/api/v0/computers').set(computer.auth)],
        ['GET /api/v0/computers/{id}', await http().get(`/api/v0/computers/${computer.id}`).set(computer.auth)],
        ['POST /api/v0/computers/{id}/agent-token', await http().post(`/api/v0/computers/${computer.id}/agent-token`).set(computer.auth).send()],
        ['POST /settings/api-keys', await http().post('/settings/api-keys').set(computer.auth).send({ name: 'escalate' })],
      ];
      for (const [route, res] of elsewhere) {
        expect({ route, status: res.status, code: res.body?.metadata?.code }).toEqual({ route, status: 403, code: 'computer_token_not_accepted' });
      }
    });

    it('answers 401 when malformed, and 401 invalid_credentials when well formed but unknown', async () => {
      const malformed = await api.claimRaw(bearer('cpt_x'));
      expect(malformed.status).toBe(401);
      expect(malformed.body.metadata.code).toEqual(expect.any(String));

      const unknown = `cpt_${randomBytes(32).toString('base64url')}`;
      expect(unknown).toMatch(TOKEN_SHAPE);
      expectV0Error(await api.claimRaw(bearer(unknown)), 401, 'invalid_credentials');
      expectV0Error(await api.connect(bearer(unknown), { hostname: 'build-01' }), 401, 'invalid_credentials');
    });
  });

  describe('rotation', () => {
    it('issues a new token; the old one answers 401 at once, the new one works', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      const before = Date.now();
      const res = await api.rotate(owner, computer.id);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['agentToken', 'computerId', 'createdAt']);
      expect(res.body.computerId).toBe(computer.id);
      expect(res.body.agentToken).toMatch(TOKEN_SHAPE);
      expect(res.body.agentToken).not.toBe(computer.agentToken);
      expect(res.body.createdAt).toBeGreaterThanOrEqual(before - 1);
      expect(res.body.createdAt).toBeLessThanOrEqual(Date.now());

      expectV0Error(await api.claimRaw(computer.auth), 401, 'invalid_credentials');
      const fresh = bearer(res.body.agentToken as string);
      expect((await api.claimRaw(fresh)).status).toBe(200);

      const [row] = (await t.app.get(DataSource).query(`SELECT agent_token_hash FROM computers WHERE id = $1`, [computer.id])) as Array<{
        agent_token_hash: string;
      }>;
      expect(row.agent_token_hash).toBe(sha256(res.body.agentToken as string));

      // The new token reaches the computer's work.
      const routed = await api.pendingWork(owner, 'after rotation', computer.id);
      expect((await api.claim(fresh))?.sessionId).toBe(routed.sessionId);
    });

    it("members rotate their own computers' tokens only (another member's 404), guests none (403)", async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const manager = await createUser(t, Role.Manager, org);
      const member = await createUser(t, Role.Member, org);
      const otherMember = await createUser(t, Role.Member, org);
      const guest = await createUser(t, Role.Guest, org);
      const mine = await api.createComputer(member);
      const theirs = await api.createComputer(otherMember);

      expectV0Error(await api.rotate(member, theirs.id), 404, 'computer_not_found');
      expectV0Error(await api.rotate(guest, mine.id), 403, 'insufficient_role');
      expectV0Error(await api.rotate(owner, randomUUID()), 404, 'computer_not_found');
      expectV0Error(await api.rotate(owner, 'not-a-uuid'), 404, 'computer_not_found');
      // The refused rotations changed nothing.
      expect((await api.claimRaw(theirs.auth)).status).toBe(200);
      expect((await api.claimRaw(mine.auth)).status).toBe(200);

      const own = await api.rotate(member, mine.id);
      expect(own.status).toBe(200);
      expect(own.body.computerId).toBe(mine.id);
      expect((await api.claimRaw(mine.auth)).status).toBe(401);

      // Owners and managers may rotate any computer of the organization.
      const byManager = await api.rotate(manager, theirs.id);
      expect(byManager.status).toBe(200);
      const byOwner = await api.rotate(owner, theirs.id);
      expect(byOwner.status).toBe(200);
      expect((await api.claimRaw(bearer(byManager.body.agentToken as string))).status).toBe(401);
      expect((await api.claimRaw(bearer(byOwner.body.agentToken as string))).status).toBe(200);

      // Another organization's owner cannot.
      const stranger = await createUser(t, Role.Owner);
      expectV0Error(await api.rotate(stranger, mine.id), 404, 'computer_not_found');
    });
  });

  describe('deleting a computer', () => {
    it('kills its token, keeps its sessions without computerId, and makes its pending work unrouted', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      const attached = await api.createSession(owner, { computerId: computer.id });
      expect((await api.getSession(owner, attached)).computerId).toBe(computer.id);
      const attachedMessage = await api.say(owner, attached, 'work on the attached session');
      const routed = await api.pendingWork(owner, 'routed by message', computer.id);
      // The work waits for the computer, not in the unrouted queue.
      expect(await api.claim(owner.auth)).toBeNull();

      await http().delete(`/api/v0/computers/${computer.id}`).set(owner.auth).expect(204);
      expectV0Error(await api.claimRaw(computer.auth), 401, 'invalid_credentials');
      expectV0Error(await api.connect(computer.auth, { hostname: 'gone' }), 401, 'invalid_credentials');
      await http().get(`/api/v0/computers/${computer.id}`).set(owner.auth).expect(404);

      const after = await api.getSession(owner, attached);
      expect(after.sessionId).toBe(attached);
      expect(after).not.toHaveProperty('computerId');
      expect(after.status).toBe('pending');
      expect((await api.getSession(owner, routed.sessionId)).status).toBe('pending');

      // Both are now unrouted work, claimable by an API key without computerId, oldest first.
      const first = (await api.claim(owner.auth))!;
      expect(first).toMatchObject({ sessionId: attached, messages: [{ id: attachedMessage }] });
      const second = (await api.claim(owner.auth))!;
      expect(second).toMatchObject({ sessionId: routed.sessionId, messages: [{ id: routed.messageId }] });
      expect(await api.claim(owner.auth)).toBeNull();
      // The deleted computer's id is unknown now.
      expectV0Error(await api.claimRaw(owner.auth, { computerId: computer.id }), 404, 'computer_not_found');
      expectV0Error(await http().get(`/api/v0/sessions?computerId=${computer.id}`).set(owner.auth), 404, 'computer_not_found');
    });

    it('of another computer leaves a token alone', async () => {
      const { owner, computer } = await api.ownerWithComputer();
      const other = await api.createComputer(owner, 'desktop');
      await http().delete(`/api/v0/computers/${other.id}`).set(owner.auth).expect(204);
      expect((await api.claimRaw(computer.auth)).status).toBe(200);
    });
  });
});

describe('Computer agents, with the credential cache on', () => {
  let t: TestApp;
  const api = helpers(() => t);

  beforeAll(async () => {
    t = await startTestApp({ PROVISIONING_CONCURRENCY: '0', AUTH_CACHE_MS: '60000' });
  });

  afterAll(() => t.close());

  it('a rotated token answers 401 at once on this instance, though it was cached', async () => {
    const { owner, computer } = await api.ownerWithComputer();
    expect((await api.claimRaw(computer.auth)).status).toBe(200);
    const rotated = await api.rotate(owner, computer.id);
    expect(rotated.status).toBe(200);
    expectV0Error(await api.claimRaw(computer.auth), 401, 'invalid_credentials');
    expect((await api.claimRaw(bearer(rotated.body.agentToken as string))).status).toBe(200);
  });

  it("a deleted computer's token answers 401 at once on this instance, though it was cached", async () => {
    const { owner, computer } = await api.ownerWithComputer();
    expect((await api.claimRaw(computer.auth)).status).toBe(200);
    await t.http().delete(`/api/v0/computers/${computer.id}`).set(owner.auth).expect(204);
    expectV0Error(await api.claimRaw(computer.auth), 401, 'invalid_credentials');
  });
});

import { randomUUID } from 'node:crypto';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser } from '../utils/factories';
import { until } from '../utils/polling';
import { TestApp } from '../utils/test-app';
import { agentChannelFixture, expectInvalid, expectV0Error } from '../utils/fixtures/agent-channel';

/** Who may act on a turn and how often: turn guards, Idempotency-Key replays and the domain events a turn raises. */

describe('Agent channel', () => {
  const fixture = agentChannelFixture();
  const { api } = fixture;
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

  describe('turn guards', () => {
    it('a turn that ended answers 409 turn_not_active to append, usage, heartbeat and end-turn', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      expect((await api.endTurn(owner, sessionId, { turnId })).status).toBe(200);
      const calls = (turn: string) => [
        api.append(owner, sessionId, { turnId: turn, messages: [{ role: 'assistant', content: [{ type: 'text', text: 'late' }] }] }),
        api.usage(owner, sessionId, { turnId: turn, model: 'm', inputTokens: 1 }),
        api.heartbeat(owner, sessionId, { turnId: turn }),
        api.endTurn(owner, sessionId, { turnId: turn }),
      ];
      for (const res of await Promise.all(calls(turnId))) {
        expectV0Error(res, 409, 'turn_not_active');
        expect(res.body.metadata.sessionStatus).toBe('idle');
      }
      // Also when a new turn is running: the old turnId is not it.
      await api.say(owner, sessionId, 'again');
      const next = (await api.claim(owner))!;
      for (const res of await Promise.all(calls(turnId))) expectV0Error(res, 409, 'turn_not_active');
      const session = await api.getSession(owner, sessionId);
      expect(session).toMatchObject({ status: 'running', messageCount: 2 });
      expect(session.sessionSettings?.tokenUsage).toBeUndefined();
      expect((await api.heartbeat(owner, sessionId, { turnId: next.turnId })).status).toBe(200);
    });

    it('a random or malformed turnId answers 409, never 500', async () => {
      const { owner, sessionId } = await api.runningSession();
      for (const turnId of [randomUUID(), 'not-a-uuid', '', 'x'.repeat(300)]) {
        for (const res of [
          await api.append(owner, sessionId, { turnId, messages: [{ role: 'assistant', content: [] }] }),
          await api.usage(owner, sessionId, { turnId, model: 'm' }),
          await api.heartbeat(owner, sessionId, { turnId }),
          await api.endTurn(owner, sessionId, { turnId }),
        ]) {
          expectV0Error(res, 409, 'turn_not_active');
        }
      }
      expectInvalid(await api.heartbeat(owner, sessionId, { turnId: 42 }), 'turnId');
      expect((await api.getSession(owner, sessionId)).status).toBe('running');
    });

    it('an unknown or malformed session id answers 404', async () => {
      const { owner, turnId } = await api.runningSession();
      for (const id of [randomUUID(), 'nope']) {
        expectV0Error(await api.heartbeat(owner, id, { turnId }), 404, 'session_not_found');
        expectV0Error(await api.endTurn(owner, id, { turnId }), 404, 'session_not_found');
      }
    });

    it('another organization’s user gets 404 and never claims the work', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      await api.say(owner, (await api.createSession(owner)).sessionId, 'pending work');
      const stranger = await createUser(t, Role.Owner);
      for (const res of [
        await api.append(stranger, sessionId, { turnId, messages: [{ role: 'assistant', content: [] }] }),
        await api.usage(stranger, sessionId, { turnId, model: 'm' }),
        await api.heartbeat(stranger, sessionId, { turnId }),
        await api.endTurn(stranger, sessionId, { turnId }),
      ]) {
        expectV0Error(res, 404, 'session_not_found');
      }
      expect(await api.claim(stranger)).toBeNull();
      expect((await api.getSession(owner, sessionId)).status).toBe('running');
    });

    it('a guest gets 403 on every agent endpoint', async () => {
      const { org, sessionId, turnId } = await api.runningSession();
      const guest = await createUser(t, Role.Guest, org);
      for (const res of [
        await api.claimRaw(guest),
        await api.append(guest, sessionId, { turnId, messages: [{ role: 'assistant', content: [] }] }),
        await api.usage(guest, sessionId, { turnId, model: 'm' }),
        await api.heartbeat(guest, sessionId, { turnId }),
        await api.endTurn(guest, sessionId, { turnId }),
      ]) {
        expect(res.status).toBe(403);
      }
    });

    it('a member claims only their own sessions and cannot touch another member’s turn', async () => {
      const org = await createOrganization(t);
      const [alice, bob, manager] = await Promise.all([createUser(t, Role.Member, org), createUser(t, Role.Member, org), createUser(t, Role.Manager, org)]);
      const aliceSession = await api.createSession(alice);
      await api.say(alice, aliceSession.sessionId, 'alice needs help');
      expect(await api.claim(bob)).toBeNull();
      expect((await api.getSession(alice, aliceSession.sessionId)).status).toBe('pending');
      const work = (await api.claim(alice))!;
      expect(work.sessionId).toBe(aliceSession.sessionId);
      for (const res of [
        await api.append(bob, work.sessionId, { turnId: work.turnId, messages: [{ role: 'assistant', content: [] }] }),
        await api.heartbeat(bob, work.sessionId, { turnId: work.turnId }),
        await api.endTurn(bob, work.sessionId, { turnId: work.turnId }),
      ]) {
        expectV0Error(res, 404, 'session_not_found');
      }
      // A manager may take any member's work.
      const bobSession = await api.createSession(bob);
      await api.say(bob, bobSession.sessionId, 'bob needs help');
      expect((await api.claim(manager))?.sessionId).toBe(bobSession.sessionId);
      expect((await api.endTurn(manager, work.sessionId, { turnId: work.turnId })).status).toBe(200);
    });
  });

  describe('Idempotency-Key', () => {
    it('a repeated claim returns the same work, replayed, and claims nothing more', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const [a, b] = [await api.createSession(owner), await api.createSession(owner)];
      await api.say(owner, a.sessionId, 'a');
      await api.say(owner, b.sessionId, 'b');
      const key = randomUUID();
      const first = await api.claimRaw(owner, {}, key);
      expect(first.status).toBe(200);
      expect(first.body.work.sessionId).toBe(a.sessionId);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const again = await api.claimRaw(owner, {}, key);
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(first.body);
      expect((await api.getSession(owner, b.sessionId)).status).toBe('pending');
      expectV0Error(await api.claimRaw(owner, { waitMs: 0 }, key), 422, 'idempotency_key_reused');
      expect((await api.getSession(owner, b.sessionId)).status).toBe('pending');
      expect((await api.claim(owner))?.sessionId).toBe(b.sessionId);
    });

    it('the same key sent twice at once claims one session', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const sessions = [await api.createSession(owner), await api.createSession(owner)];
      for (const s of sessions) await api.say(owner, s.sessionId, 'x');
      const key = randomUUID();
      const [r1, r2] = await Promise.all([api.claimRaw(owner, {}, key), api.claimRaw(owner, {}, key)]);
      expect([r1.status, r2.status]).toEqual([200, 200]);
      expect(r1.body).toEqual(r2.body);
      expect([r1.headers['idempotent-replayed'], r2.headers['idempotent-replayed']].filter(Boolean)).toEqual(['true']);
      const statuses = await Promise.all(sessions.map(async (s) => (await api.getSession(owner, s.sessionId)).status));
      expect(statuses.sort()).toEqual(['pending', 'running']);
    });

    it('append, usage and end-turn replay their answer and do nothing twice', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      const body = { turnId, messages: [{ role: 'assistant', content: [{ type: 'text', text: 'once' }] }] };
      const key = randomUUID();
      const first = await api.append(owner, sessionId, body, key);
      const again = await api.append(owner, sessionId, body, key);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(first.body);
      expectV0Error(await api.append(owner, sessionId, { ...body, messages: [...body.messages, ...body.messages] }, key), 422, 'idempotency_key_reused');
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(2);

      const usageKey = randomUUID();
      await api.usage(owner, sessionId, { turnId, model: 'm', inputTokens: 5 }, usageKey);
      const usageAgain = await api.usage(owner, sessionId, { turnId, model: 'm', inputTokens: 5 }, usageKey);
      expect(usageAgain.headers['idempotent-replayed']).toBe('true');
      expect((await api.getSession(owner, sessionId)).sessionSettings?.tokenUsage).toMatchObject({ inputTokens: 5 });

      const endKey = randomUUID();
      const ended = await api.endTurn(owner, sessionId, { turnId }, endKey);
      expect(ended.status).toBe(200);
      const endedAgain = await api.endTurn(owner, sessionId, { turnId }, endKey);
      expect(endedAgain.status).toBe(200);
      expect(endedAgain.headers['idempotent-replayed']).toBe('true');
      expect(endedAgain.body).toEqual(ended.body);
    });
  });

  describe('domain events', () => {
    it('raise message.added and session.status_changed with ids, organization, actor and from/to, numbered in commit order', async () => {
      const emitter = t.app.get(EventEmitter2);
      const seen: Array<Record<string, unknown>> = [];
      const record = (event: Record<string, unknown>) => seen.push(event);
      emitter.on('message.added', record);
      emitter.on('session.status_changed', record);
      try {
        const org = await createOrganization(t);
        const owner = await createUser(t, Role.Owner, org);
        const { sessionId } = await api.createSession(owner);
        /** This session's events since the last call, in order, once there are `count` (emitted after each answer, in the background). */
        const drain = async (count: number) => {
          const mine = () => seen.filter((e) => e.sessionId === sessionId);
          await until(
            () => mine().length,
            (n) => n >= count,
            `${count} events`,
          );
          const events = mine();
          seen.length = 0;
          seqs.push(...events.map((e) => e.seq as number));
          return events;
        };
        const common = { organizationId: org.id, sessionId, occurredAt: expect.any(Date), id: expect.any(String), seq: expect.any(Number) };
        const added = (messageId: string, role: string, _seq: number, authorId: string | null) => ({
          type: 'message.added',
          ...common,
          actor: expect.objectContaining({ userId: owner.userId, kind: 'user' }),
          data: { sessionId, messageId, role, authorId, computerId: null },
        });
        const status = (from: string, to: string) => ({
          type: 'session.status_changed',
          ...common,
          actor: expect.objectContaining({ userId: owner.userId }),
          data: { sessionId, from, to },
        });
        const seqs: number[] = [];

        const key = randomUUID();
        const first = await api.addMessage(owner, sessionId, 'hi', key);
        expect((await api.addMessage(owner, sessionId, 'hi', key)).headers['idempotent-replayed']).toBe('true');
        expect(await drain(2)).toEqual([added(first.body.messageId, 'user', 1, owner.userId), status('idle', 'pending')]);

        const work = (await api.claim(owner))!;
        expect(await drain(1)).toEqual([status('pending', 'running')]);

        const appended = await api.append(owner, sessionId, {
          turnId: work.turnId,
          messages: [
            { role: 'assistant', content: [] },
            { role: 'tool', content: [] },
          ],
        });
        expect(await drain(2)).toEqual([added(appended.body.messages[0].id, 'assistant', 2, null), added(appended.body.messages[1].id, 'tool', 3, null)]);

        const during = await api.say(owner, sessionId, 'while running', 'running');
        expect(await drain(1)).toEqual([added(during, 'user', 4, owner.userId)]);

        await api.endTurn(owner, sessionId, { turnId: work.turnId });
        expect(await drain(1)).toEqual([status('running', 'pending')]);

        const next = (await api.claim(owner))!;
        await api.endTurn(owner, sessionId, { turnId: next.turnId });
        expect(await drain(2)).toEqual([status('pending', 'running'), status('running', 'idle')]);
        // The organization's log holds every event above, one after the other with no gap (the replay raised none).
        expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i));
      } finally {
        emitter.off('message.added', record);
        emitter.off('session.status_changed', record);
      }
    });
  });
});

import { Role } from '../../src/modules/auth';
import { EventLog } from '../../src/platform/events';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { sleep } from '../utils/polling';
import { payloads, SseStream } from '../utils/sse';
import { TestApp } from '../utils/test-app';
import { expectV0Error } from '../utils/v0-errors';
import { eventStreamsFixture, Json } from '../utils/fixtures/event-streams';

const CONTROLS = '/api/v0/organization/enterprise-controls';

/**
 * The public event API over real HTTP: which events a reader gets, streamed or listed. Every event of
 * a session in commit order across a reconnect, only the types asked for, nothing of another
 * organization, and what each role may see. On PostgreSQL, a second instance serves the streams
 * while the first takes the writes.
 */
describe('Event streams and lists', () => {
  const fixture = eventStreamsFixture();
  const { validateEvent, schemaErrors, stream, post, session, turn, listAll, ids } = fixture;
  let writer: TestApp;
  let reader: TestApp;
  beforeAll(() => ({ writer, reader } = fixture));

  it('streams every event of a busy session in commit order, with no gap and no duplicate across a reconnect with Last-Event-ID', async () => {
    const org = await createOrganization(writer, { messageHistory: true });
    const owner = await createUser(writer, Role.Owner, org);
    const sessionId = await session(owner);
    const first = await stream(owner, `/api/v0/sessions/${sessionId}/events`);
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(first.headers['cache-control']).toBe('no-store');
    expect(first.headers['x-request-id']).toBeTruthy();

    // A user writes while an agent works, concurrently, for a while; the stream is cut and resumed midway.
    const busy = (from: number, to: number) =>
      Promise.all([
        (async () => {
          for (let i = from; i < to; i++) await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: `ask ${i}` }).expect(200);
        })(),
        (async () => {
          for (let i = from; i < to; i++) {
            await turn(owner, sessionId, i);
            await sleep(5);
          }
        })(),
      ]);
    await busy(0, 6);
    await first.until((s) => s.events.length >= 6, 'events before the cut');
    first.close();
    const lastSeen = first.events[first.events.length - 1].id!;
    // Work goes on while nobody listens.
    await busy(6, 9);
    const second = await stream(owner, `/api/v0/sessions/${sessionId}/events?after=0`, { 'Last-Event-ID': lastSeen });
    expect(second.status).toBe(200);
    await busy(9, 12);
    // Whatever is left pending is taken by a last turn, so the session ends idle.
    await turn(owner, sessionId, 99);

    const logged = (await writer.app.get(EventLog).read(owner.organizationId, { after: 0, limit: 10_000, sessionId })).map((e) => e.seq);
    await second.until(
      (s) => s.events.length > 0 && Number(s.events[s.events.length - 1].id) === logged[logged.length - 1],
      'the last event after the reconnect',
    );
    second.close();
    const seen = [...ids(first), ...ids(second)];
    // The first stream started live (no Last-Event-ID): from the session's creation on it missed nothing.
    expect(seen).toEqual(logged.filter((seq) => seq > Number(logged[0]) - 1 && seq >= ids(first)[0]));
    expect(new Set(seen).size).toBe(seen.length);
    expect(ids(second)[0]).toBeGreaterThan(Number(lastSeen));
    expect(logged.filter((seq) => seq > Number(lastSeen))).toEqual(ids(second));

    const events = [...payloads(first), ...payloads(second)];
    for (const event of events) if (!validateEvent(event)) throw new Error(`${event.type} does not match its schema: ${schemaErrors()}`);
    for (const [i, event] of events.entries()) {
      expect(event.seq).toBe(seen[i]);
      expect([...first.events, ...second.events][i].event).toBe(event.type);
      expect(event.sessionId).toBe(sessionId);
      expect(event.organizationId).toBe(owner.organizationId);
    }
    // message.added carries the message (the organization keeps message history), in conversation order.
    const added = events.filter((e) => e.type === 'message.added');
    const messages = await listAllMessages(owner, sessionId);
    expect(added.map((e) => e.data.message.id)).toEqual(messages.map((m) => m.id));
    expect(added.map((e) => e.data.message)).toEqual(messages);
    expect(added[0].actor).toEqual({ kind: 'user', userId: owner.userId });
    expect(added[0].target).toEqual({ kind: 'message', id: added[0].data.messageId });
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['message.added', 'session.status_changed', 'turn.usage_reported']));
    // The JSON list of the session holds the very same events.
    const listed = await listAll(owner, `/api/v0/sessions/${sessionId}/events`, 7);
    expect(listed.filter((e) => e.seq >= seen[0])).toEqual(events);
  }, 60_000);

  async function listAllMessages(user: TestUser, sessionId: string): Promise<Json[]> {
    const res = await reader.http().get(`/api/v0/sessions/${sessionId}/messages?limit=100`).set(user.auth).expect(200);
    return res.body.messages as Json[];
  }

  it('leaves the message out of message.added where the organization keeps no message history', async () => {
    const owner = await createUser(writer, Role.Owner, await createOrganization(writer));
    const sessionId = await session(owner);
    const live = await stream(owner, '/api/v0/events?types=message.added');
    await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'private' }).expect(200);
    await live.until((s) => s.events.length === 1, 'the message');
    live.close();
    const [event] = payloads(live);
    expect(event.data).toEqual({ sessionId, messageId: expect.any(String), role: 'user', authorId: owner.userId, computerId: null });
    expect(JSON.stringify(live.events)).not.toContain('private');
  });

  it("answers 404 for another organization's session, an unknown one or a malformed id, streamed or listed", async () => {
    const owner = await createUser(writer, Role.Owner);
    const stranger = await createUser(writer, Role.Owner);
    const theirs = await session(stranger);
    for (const id of [theirs, '0196f1d2-7c3a-7e0b-9f41-3a5c2b8d9e10', 'not-a-session']) {
      const s = await stream(owner, `/api/v0/sessions/${id}/events`);
      await s.ended;
      expect(s.status).toBe(404);
      expect(s.body()).toMatchObject({ status: 404, metadata: { code: 'session_not_found' } });
      expectV0Error(await reader.http().get(`/api/v0/sessions/${id}/events`).set(owner.auth), 404, 'session_not_found');
    }
    // Nothing of theirs in my organization's stream either.
    const mine = await listAll(owner, '/api/v0/events');
    expect(mine.every((e) => e.organizationId === owner.organizationId)).toBe(true);
    expect(JSON.stringify(mine)).not.toContain(theirs);
  });

  it('keeps only the types asked for, and refuses unknown ones', async () => {
    const owner = await createUser(writer, Role.Owner);
    const sessionId = await session(owner);
    const live = await stream(owner, '/api/v0/events?types=session.status_changed,session.created');
    await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'go' }).expect(200);
    await session(owner, 'second');
    await live.until((s) => s.events.length === 2, 'two events');
    await sleep(200);
    live.close();
    expect(live.events.map((e) => e.event)).toEqual(['session.status_changed', 'session.created']);
    const listed = await listAll(owner, '/api/v0/events?types=session.created');
    expect(listed.map((e) => e.type)).toEqual(['session.created', 'session.created']);
    const bad = await reader.http().get('/api/v0/events?types=session.created,session.exploded').set(owner.auth);
    expectV0Error(bad, 400, 'validation_failed');
    expect(bad.body.detail).toContain('session.exploded');
    expectV0Error(await reader.http().get('/api/v0/events?colour=red').set(owner.auth), 400, 'validation_failed');
  });

  describe('roles', () => {
    it("shows members the sessions they may read, their computers and keys, never the organization's administration", async () => {
      const org = await createOrganization(writer);
      const owner = await createUser(writer, Role.Owner, org);
      const member = await createUser(writer, Role.Member, org);
      const other = await createUser(writer, Role.Member, org);
      const guest = await createUser(writer, Role.Guest, org);
      const memberLive = await stream(member, '/api/v0/events');
      const guestLive = await stream(guest, '/api/v0/events');
      const ownerLive = await stream(owner, '/api/v0/events');

      const ownerSession = await session(owner, "the owner's");
      const otherSession = await session(other, "another member's");
      const memberSession = await session(member, "the member's");
      await writer
        .http()
        .patch(CONTROLS)
        .set(owner.auth)
        .send({ settings: { restrictMemberVisibility: true } })
        .expect(200);
      const hidden = await session(other, 'hidden now');
      await post(other, `/api/v0/sessions/${hidden}/messages`, { text: 'secret' }).expect(200);
      await post(member, `/api/v0/sessions/${memberSession}/messages`, { text: 'mine' }).expect(200);
      await post(other, '/settings/api-keys', { name: 'theirs' }).expect(201);
      await post(member, '/settings/api-keys', { name: 'mine' }).expect(201);
      await post(owner, '/api/v0/organization/members', { email: 'new@example.test', name: 'New', role: 'member' }).expect(201);
      const computer = await post(member, '/api/v0/computers', {
        name: 'mine',
        provider: 'byom',
        hostId: '6f1c2a4e-8b3d-4e5f-9a7b-1c2d3e4f5a6b',
        remoteUser: 'dev',
      }).expect(201);
      await post(other, '/api/v0/computers', { name: 'theirs', provider: 'byom', hostId: '7f1c2a4e-8b3d-4e5f-9a7b-1c2d3e4f5a6b', remoteUser: 'dev' }).expect(
        201,
      );
      const marker = await session(member, 'marker');

      for (const live of [memberLive, guestLive, ownerLive])
        await live.until((s) => payloads(s).some((e) => e.type === 'session.created' && e.sessionId === marker) || s === guestLive, 'the marker');
      await ownerLive.until((s) => payloads(s).some((e) => e.sessionId === marker), 'the marker (owner)');
      await sleep(300);
      for (const live of [memberLive, guestLive, ownerLive]) live.close();

      const seenBy = (live: SseStream) => payloads(live).map((e) => `${e.type}:${e.target.id}`);
      const member_ = payloads(memberLive);
      // Before the restriction, members read every session; after it, their own only.
      expect(member_.filter((e) => e.type === 'session.created').map((e) => e.sessionId)).toEqual([ownerSession, otherSession, memberSession, marker]);
      expect(member_.some((e) => e.sessionId === hidden)).toBe(false);
      expect(member_.filter((e) => e.type === 'message.added').map((e) => e.sessionId)).toEqual([memberSession]);
      expect(member_.filter((e) => e.type === 'api_key.created').map((e) => e.data.userId)).toEqual([member.userId]);
      expect(member_.filter((e) => e.type.startsWith('computer.')).map((e) => e.data.computerId)).toEqual([computer.body.id]);
      expect(seenBy(memberLive).some((s) => s.startsWith('member.changed') || s.startsWith('controls.revised'))).toBe(false);
      // Actors are ids only outside the audit log.
      for (const event of member_) if (event.actor) expect(Object.keys(event.actor).sort()).toEqual(expect.arrayContaining(['kind']));
      expect(JSON.stringify(member_)).not.toMatch(/"(email|ip|requestId|credentialId)"/);

      // Guests: their own sessions only (they have none), no computers, their own keys only.
      expect(payloads(guestLive)).toEqual([]);
      // The owner sees it all.
      const owner_ = payloads(ownerLive);
      expect(owner_.map((e) => e.type)).toEqual(
        expect.arrayContaining(['controls.revised', 'member.changed', 'api_key.created', 'computer.created', 'message.added']),
      );
      expect(owner_.some((e) => e.sessionId === hidden)).toBe(true);

      // The list follows the same rules as they are now: the sessions of others are hidden since the restriction (the
      // member's key, made before the stream opened, comes first).
      const listed = await listAll(member, '/api/v0/events', 3);
      expect(listed[0]).toMatchObject({ type: 'api_key.created', data: { userId: member.userId } });
      expect(listed.slice(1).map((e) => e.seq)).toEqual(member_.filter((e) => e.sessionId !== ownerSession && e.sessionId !== otherSession).map((e) => e.seq));
      expectV0Error(await reader.http().get(`/api/v0/sessions/${hidden}/events`).set(member.auth), 404, 'session_not_found');
      const refused = await stream(guest, `/api/v0/sessions/${ownerSession}/events`);
      await refused.ended;
      expect(refused.status).toBe(404);
    }, 30_000);
  });
});

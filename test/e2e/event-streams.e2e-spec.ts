import Ajv2020 from 'ajv/dist/2020';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { EventLog } from '../../src/platform/events';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { sleep } from '../utils/polling';
import { openStream, payloads, SseStream } from '../utils/sse';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';
import { expectV0Error } from '../utils/v0-errors';

/* eslint-disable @typescript-eslint/no-explicit-any -- events are read as the JSON the wire carries */
type Json = Record<string, any>;

const CONTROLS = '/api/v0/organization/enterprise-controls';

/**
 * The public event API over real HTTP: server-sent event streams (resumable, live, limited, ended
 * on shutdown and revocation) and JSON lists of an organization's and a session's events, under the
 * role rules. On PostgreSQL, a second instance serves the streams while the first takes the writes.
 */
describe('Event streams and lists', () => {
  let database: TestDatabase;
  let writer: TestApp;
  let reader: TestApp;
  let validateEvent: (event: unknown) => boolean;
  let schemaErrors: () => string;

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = {
      EVENT_STREAM_HEARTBEAT_MS: '300',
      EVENT_STREAMS_PER_CREDENTIAL: '3',
      EVENT_STREAMS_PER_ORGANIZATION: '5',
      CONTROLS_CACHE_MS: '0',
      AUTH_CACHE_MS: '0',
    };
    writer = await startTestApp(env, database);
    reader = serverUrl() ? await startTestApp(env, database) : writer;
    const doc = (await writer.http().get('/docs-json').expect(200)).body as Json;
    const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, validateFormats: false });
    ajv.addSchema({ ...doc, $id: 'openapi' });
    const validate = ajv.compile({ $ref: 'openapi#/components/schemas/Event' });
    validateEvent = (event) => validate(event);
    schemaErrors = () => ajv.errorsText(validate.errors);
  });

  afterAll(async () => {
    if (reader !== writer) await reader?.close();
    await writer?.close();
    await database?.drop();
  });

  const base = () => reader.app.getHttpServer().address() as { port: number };
  const url = () => `http://127.0.0.1:${base().port}`;
  const stream = (user: TestUser, path: string, headers: Record<string, string> = {}) => openStream(url(), path, { ...user.auth, ...headers });
  const post = (user: TestUser, path: string, body: object) => writer.http().post(path).set(user.auth).send(body);

  async function session(user: TestUser, title = 'work'): Promise<string> {
    const res = await post(user, '/api/v0/sessions', { title }).expect(201);
    return res.body.sessionId as string;
  }

  /** One agent turn on the session over the agent channel: claim, two messages, usage, end. */
  async function turn(agent: TestUser, sessionId: string, i: number): Promise<void> {
    const claim = await post(agent, '/api/v0/agent/claims', {}).expect(200);
    const work = claim.body.work as Json | null;
    if (!work) return;
    expect(work.sessionId).toBe(sessionId);
    await post(agent, `/api/v0/agent/sessions/${sessionId}/messages`, {
      turnId: work.turnId,
      messages: [
        { role: 'assistant', content: [{ type: 'text', text: `thinking ${i}` }] },
        { role: 'tool', content: [{ type: 'text', text: `ran ${i}` }] },
      ],
    }).expect(200);
    await post(agent, `/api/v0/agent/sessions/${sessionId}/usage`, { turnId: work.turnId, model: 'model-a', inputTokens: 10 + i, outputTokens: 5 }).expect(200);
    await post(agent, `/api/v0/agent/sessions/${sessionId}/end-turn`, { turnId: work.turnId }).expect(200);
  }

  /** Every event of a JSON list, following `nextCursor` to the end. */
  async function listAll(user: TestUser, path: string, limit = 100): Promise<Json[]> {
    const events: Json[] = [];
    const join = path.includes('?') ? '&' : '?';
    let query = `limit=${limit}`;
    for (let i = 0; i < 1000; i++) {
      const res = await reader.http().get(`${path}${join}${query}`).set(user.auth).expect(200);
      expect(Object.keys(res.body).sort()).toEqual(['events', 'pagination']);
      events.push(...(res.body.events as Json[]));
      if (!res.body.pagination.hasMore) return events;
      query = `limit=${limit}&cursor=${encodeURIComponent(res.body.pagination.nextCursor as string)}`;
    }
    throw new Error('too many pages');
  }

  const ids = (s: SseStream) => s.events.map((e) => Number(e.id));

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

  describe('resuming', () => {
    it('answers 410 with the oldest id kept when the resume point is past retention, and takes 0 as "from the oldest kept"', async () => {
      const owner = await createUser(writer, Role.Owner);
      // Its key's api_key.created is event 1, the sessions 2 to 5.
      for (let i = 0; i < 4; i++) await session(owner, `s${i}`);
      // The first three events become older than EVENT_RETENTION_DAYS, and the retention sweep forgets them.
      await writer.app
        .get(DataSource)
        .query(`UPDATE events SET occurred_at = now() - interval '40 days' WHERE organization_id = $1 AND seq <= 3`, [owner.organizationId]);
      expect(await writer.app.get(EventLog).forgetExpired()).toBeGreaterThanOrEqual(3);

      const tooOld = await stream(owner, '/api/v0/events', { 'Last-Event-ID': '1' });
      await tooOld.ended;
      expect(tooOld.status).toBe(410);
      expect(tooOld.body()).toMatchObject({ status: 410, title: 'Gone', metadata: { code: 'event_expired', oldestId: 4 } });
      expectV0Error(await reader.http().get('/api/v0/events?after=2').set(owner.auth), 410, 'event_expired');
      // Right before the oldest kept is fine, and 0 is "from the oldest kept".
      const listed = await reader.http().get('/api/v0/events?after=3').set(owner.auth).expect(200);
      expect(listed.body.events.map((e: Json) => e.seq)).toEqual([4, 5]);
      const fromZero = await stream(owner, '/api/v0/events', { 'Last-Event-ID': '0' });
      await fromZero.until((s) => s.events.length === 2, 'the events kept');
      fromZero.close();
      expect(ids(fromZero)).toEqual([4, 5]);
      // Past the end of the log, or not a number: 400.
      for (const id of ['6', 'abc', '-1', '1e3']) {
        const bad = await stream(owner, '/api/v0/events', { 'Last-Event-ID': id });
        await bad.ended;
        expect([id, bad.status, (bad.body() as Json).metadata.code]).toEqual([id, 400, 'invalid_event_id']);
      }
      expectV0Error(await reader.http().get('/api/v0/events?after=99').set(owner.auth), 400, 'invalid_event_id');
    });
  });

  describe('the JSON list', () => {
    it('pages oldest first with limit and an opaque cursor, or from `after`', async () => {
      const owner = await createUser(writer, Role.Owner);
      // Its key's api_key.created, then 25 sessions created.
      for (let i = 0; i < 25; i++) await session(owner, `s${i}`);
      const pages: Json[] = [];
      let query = 'limit=10';
      for (;;) {
        const res = await reader.http().get(`/api/v0/events?${query}`).set(owner.auth).expect(200);
        pages.push(res.body);
        if (!res.body.pagination.hasMore) break;
        query = `limit=10&cursor=${encodeURIComponent(res.body.pagination.nextCursor as string)}`;
      }
      expect(pages.map((p) => p.events.length)).toEqual([10, 10, 6]);
      expect(pages.flatMap((p) => p.events.map((e: Json) => e.seq))).toEqual(Array.from({ length: 26 }, (_, i) => i + 1));
      expect(pages[2].pagination).toEqual({ hasMore: false, nextCursor: null });
      const after = await reader.http().get('/api/v0/events?after=20&limit=3').set(owner.auth).expect(200);
      expect(after.body.events.map((e: Json) => e.seq)).toEqual([21, 22, 23]);
      // Defaults: 20 from the oldest.
      expect((await reader.http().get('/api/v0/events').set(owner.auth).expect(200)).body.events).toHaveLength(20);
      // A session list's cursor is not the organization's; a cursor and `after` together are ambiguous.
      const sessionId = (await reader.http().get('/api/v0/events?after=1&limit=1').set(owner.auth)).body.events[0].sessionId as string;
      await session(owner);
      const sessionPage = await reader.http().get(`/api/v0/sessions/${sessionId}/events?limit=1`).set(owner.auth).expect(200);
      expect(sessionPage.body.pagination.hasMore).toBe(false);
      const cursor = pages[0].pagination.nextCursor as string;
      expectV0Error(
        await reader
          .http()
          .get(`/api/v0/sessions/${sessionId}/events?cursor=${encodeURIComponent(cursor)}`)
          .set(owner.auth),
        400,
        'invalid_cursor',
      );
      expectV0Error(
        await reader
          .http()
          .get(`/api/v0/events?after=1&cursor=${encodeURIComponent(cursor)}`)
          .set(owner.auth),
        400,
        'validation_failed',
      );
      for (const q of ['limit=0', 'limit=101', 'after=-1', 'after=x'])
        expectV0Error(await reader.http().get(`/api/v0/events?${q}`).set(owner.auth), 400, 'validation_failed');
    });
  });

  describe('the stream itself', () => {
    it('sends a heartbeat comment while nothing happens', async () => {
      const owner = await createUser(writer, Role.Owner);
      const live = await stream(owner, '/api/v0/events');
      await live.until((s) => s.comments.filter((c) => c === 'heartbeat').length >= 2, 'two heartbeats', 5_000);
      live.close();
      expect(live.events).toEqual([]);
    });

    it('limits the streams open at once per credential and per organization with 429, and frees a slot when one closes', async () => {
      const org = await createOrganization(writer);
      const a = await createUser(writer, Role.Owner, org);
      const b = await createUser(writer, Role.Member, org);
      const open: SseStream[] = [];
      for (let i = 0; i < 3; i++) open.push(await stream(a, '/api/v0/events'));
      expect(open.map((s) => s.status)).toEqual([200, 200, 200]);
      const fourth = await stream(a, '/api/v0/events');
      await fourth.ended;
      expect(fourth.status).toBe(429);
      expect(fourth.headers['retry-after']).toBe('5');
      expect(fourth.body()).toMatchObject({ status: 429, metadata: { code: 'too_many_streams', quota: 'EVENT_STREAMS_PER_CREDENTIAL', limit: 3 } });
      // Lists are not streams: never counted.
      await reader.http().get('/api/v0/events').set(a.auth).expect(200);
      // Another key of the organization gets the organization's last two, then 429 too.
      open.push(await stream(b, '/api/v0/events'), await stream(b, '/api/v0/events'));
      const over = await stream(b, '/api/v0/events');
      await over.ended;
      expect(over.body()).toMatchObject({ status: 429, metadata: { code: 'too_many_streams', quota: 'EVENT_STREAMS_PER_ORGANIZATION', limit: 5 } });
      open[0].close();
      let again: SseStream | undefined;
      for (let i = 0; i < 50 && again?.status !== 200; i++) {
        again?.close();
        await sleep(20);
        again = await stream(a, '/api/v0/events');
      }
      expect(again!.status).toBe(200);
      for (const s of [...open, again!]) s.close();
    });

    it('tells of a deleted computer its owner and the administrators, and its agent token stops working on every instance', async () => {
      const org = await createOrganization(writer);
      const owner = await createUser(writer, Role.Owner, org);
      const member = await createUser(writer, Role.Member, org);
      const other = await createUser(writer, Role.Member, org);
      const computer = await post(member, '/api/v0/computers', {
        name: 'doomed',
        provider: 'byom',
        hostId: '8f1c2a4e-8b3d-4e5f-9a7b-1c2d3e4f5a6b',
        remoteUser: 'dev',
      }).expect(201);
      const agentAuth = { authorization: `Bearer ${computer.body.agentToken as string}` };
      await reader.http().post('/api/v0/agent/claims').set(agentAuth).send({ waitMs: 0 }).expect(200);
      const [ownerLive, memberLive, otherLive] = await Promise.all([owner, member, other].map((user) => stream(user, '/api/v0/events')));
      await writer
        .http()
        .delete(`/api/v0/computers/${computer.body.id as string}`)
        .set(member.auth)
        .expect(204);
      for (const app of [writer, reader]) await app.http().post('/api/v0/agent/claims').set(agentAuth).send({ waitMs: 0 }).expect(401);
      const deleted = (live: SseStream) => payloads(live).filter((e) => e.type === 'computer.deleted');
      for (const live of [ownerLive, memberLive]) await live.until((l) => deleted(l).length > 0, 'computer.deleted');
      const [event] = deleted(memberLive);
      expect(event).toMatchObject({
        target: { kind: 'computer', id: computer.body.id },
        data: { computerId: computer.body.id, name: 'doomed', provider: 'byom', ownerId: member.userId },
      });
      expect(validateEvent(event)).toBe(true);
      const marker = await session(other, 'after the deletion');
      await otherLive.until((l) => payloads(l).some((e) => e.sessionId === marker), 'the marker');
      expect(deleted(otherLive)).toEqual([]);
      for (const live of [ownerLive, memberLive, otherLive]) live.close();
      // Deleted once: the second delete is 404 and writes no event.
      await writer
        .http()
        .delete(`/api/v0/computers/${computer.body.id as string}`)
        .set(member.auth)
        .expect(404);
      expect((await reader.app.get(EventLog).read(org.id, { after: 0, limit: 100, types: ['computer.deleted'] })).length).toBe(1);
    });

    it('ends the streams of a revoked key', async () => {
      const owner = await createUser(writer, Role.Owner);
      const live = await stream(owner, '/api/v0/events');
      expect(live.status).toBe(200);
      await writer.http().delete(`/settings/api-keys/${owner.apiKeyId}`).set(owner.auth).expect(200);
      await Promise.race([live.ended, sleep(5_000).then(() => Promise.reject(new Error('the stream did not end')))]);
    });
  });
});

describe('Event streams at shutdown', () => {
  it('end cleanly, and the server closes without waiting for them', async () => {
    const t = await startTestApp({ EVENT_STREAM_HEARTBEAT_MS: '60000' });
    const owner = await createUser(t, Role.Owner);
    const address = t.app.getHttpServer().address() as { port: number };
    const streams = await Promise.all([1, 2].map(() => openStream(`http://127.0.0.1:${address.port}`, '/api/v0/events', owner.auth)));
    expect(streams.map((s) => s.status)).toEqual([200, 200]);
    const started = Date.now();
    await t.close();
    await Promise.all(streams.map((s) => s.ended));
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

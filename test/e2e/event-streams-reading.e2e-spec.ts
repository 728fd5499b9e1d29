import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { EventLog } from '../../src/platform/events';
import { createOrganization, createUser } from '../utils/factories';
import { ENDED_EARLY_MS, LONG_WAIT_MS, until, within } from '../utils/polling';
import { openStream, payloads, SseStream } from '../utils/sse';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectV0Error } from '../utils/v0-errors';
import { eventStreamsFixture, Json } from '../utils/fixtures/event-streams';

/**
 * The public event API over real HTTP: how events are read. Resumed from a point, paged as a JSON
 * list, and streamed live (heartbeats, a limit on open streams, ended on revocation and shutdown).
 * On PostgreSQL, a second instance serves the streams while the first takes the writes.
 */
describe('Event streams and lists', () => {
  const fixture = eventStreamsFixture();
  const { validateEvent, stream, post, session, ids } = fixture;
  let writer: TestApp;
  let reader: TestApp;
  beforeAll(() => ({ writer, reader } = fixture));

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
      // Freed when the server sees the connection close: until then another stream is still refused.
      const again = await until(
        async () => {
          const attempt = await stream(a, '/api/v0/events');
          if (attempt.status !== 200) attempt.close();
          return attempt;
        },
        (attempt) => attempt.status === 200,
        'a slot to be freed',
        LONG_WAIT_MS,
      );
      expect(again.status).toBe(200);
      for (const s of [...open, again]) s.close();
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
      // Nothing else would end it: its heartbeats would go on for good.
      await within(live.ended, LONG_WAIT_MS, 'the stream to end');
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
    // Waited for, they would hold the close for good: nothing ends them but the server (a heartbeat a minute, no end of
    // their own).
    expect(Date.now() - started).toBeLessThan(ENDED_EARLY_MS);
  });
});

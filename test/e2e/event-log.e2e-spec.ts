import { EventEmitter2 } from '@nestjs/event-emitter';
import { DataSource, EntityManager } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { AdvisoryLock } from '../../src/platform/database/advisory-locks';
import { AnyStoredEvent, DurableListeners, EventLog } from '../../src/platform/events';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { sleep } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';

/** Waits until `done` holds, or fails after `ms`. */
async function until(done: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * The event log (a transactional outbox) on the real app and database: what a command raises is
 * stored with it or not at all, numbered per organization in commit order with no gap, emitted to
 * listeners only after the commit, and handled by durable listeners exactly once per effect.
 */
describe('The event log', () => {
  let database: TestDatabase;
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    database = await createTestDatabase();
    t = await startTestApp({ EVENT_LISTENER_SWEEP_MS: '100', PROVISIONING_CONCURRENCY: '0' }, database);
    owner = await createUser(t, Role.Owner, await createOrganization(t));
  });

  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  const log = () => t.app.get(EventLog);
  const seqsOf = async (organizationId: string) => (await log().read(organizationId, { after: 0, limit: 10_000 })).map((e) => e.seq);

  it("numbers an organization's events 1, 2, 3... with no gap in commit order, even when commands race", async () => {
    const racer = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    const sessions = await Promise.all([1, 2, 3, 4].map(() => t.http().post('/api/v0/sessions').set(racer.auth).send({}).expect(201)));
    // 40 messages at once into four sessions: on PostgreSQL, concurrent transactions.
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        t
          .http()
          .post(`/api/v0/sessions/${sessions[i % 4].body.sessionId as string}/messages`)
          .set(racer.auth)
          .send({ text: `m${i}` })
          .expect(200),
      ),
    );
    // Numbered in the background after each commit; a read of the log settles first.
    const events = await log().read(racer.organizationId, { after: 0, limit: 1000 });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === 'message.added')).toHaveLength(40);
    // Within each session, the log's order is the messages' order.
    for (const session of sessions) {
      const id = session.body.sessionId as string;
      const messages = await t.http().get(`/api/v0/sessions/${id}/messages?limit=100`).set(racer.auth).expect(200);
      const listed = (messages.body.messages as Array<{ id: string }>).map((m) => m.id);
      const logged = events.filter((e) => e.type === 'message.added' && e.sessionId === id).map((e) => (e.data as { messageId: string }).messageId);
      expect(logged).toHaveLength(10);
      expect(logged).toEqual(listed);
    }
    expect(await log().bounds(racer.organizationId)).toEqual({ oldest: 1, last: events.length });
  });

  it('stores nothing and emits nothing for a command that fails or rolls back', async () => {
    const emitted: AnyStoredEvent[] = [];
    const record = (event: AnyStoredEvent) => emitted.push(event);
    t.app.get(EventEmitter2).on('session.created', record);
    try {
      const before = await seqsOf(owner.organizationId);
      await expect(
        t.app.get(DataSource).transaction(async (manager) => {
          log().raise(manager, {
            type: 'session.created',
            organizationId: owner.organizationId,
            data: { sessionId: owner.userId, ownerId: owner.userId, computerId: null, title: 'never' },
          });
          throw new Error('the command failed after raising');
        }),
      ).rejects.toThrow('the command failed after raising');
      // A bad request is refused before anything is raised.
      await t.http().post('/api/v0/sessions').set(owner.auth).send({ title: 42 }).expect(400);
      expect(await seqsOf(owner.organizationId)).toEqual(before);
      expect(emitted).toEqual([]);
      // Raising outside a transaction is a mistake the code cannot make silently.
      expect(() =>
        log().raise(t.app.get(DataSource).manager, {
          type: 'session.created',
          organizationId: owner.organizationId,
          data: { sessionId: owner.userId, ownerId: owner.userId, computerId: null, title: null },
        }),
      ).toThrow(/inside the transaction/);
    } finally {
      t.app.get(EventEmitter2).off('session.created', record);
    }
  });

  it('emits after the commit, with the actor, the client address and the request id', async () => {
    const emitted: AnyStoredEvent[] = [];
    const record = (event: AnyStoredEvent) => emitted.push(event);
    t.app.get(EventEmitter2).on('session.created', record);
    try {
      const created = await t.http().post('/api/v0/sessions').set(owner.auth).set('x-request-id', 'event-log-actor').send({ title: 'seen' }).expect(201);
      // Emitted once numbered, in the background after the commit (the answer does not wait).
      await until(() => emitted.some((e) => e.sessionId === created.body.sessionId), 'the event to reach the listeners');
      const mine = emitted.filter((e) => e.sessionId === created.body.sessionId);
      expect(mine).toEqual([
        expect.objectContaining({
          type: 'session.created',
          organizationId: owner.organizationId,
          actor: {
            kind: 'user',
            userId: owner.userId,
            email: owner.email,
            role: 'owner',
            credential: 'api_key',
            credentialId: owner.apiKeyId,
            ip: '127.0.0.1',
            requestId: 'event-log-actor',
          },
          data: { sessionId: created.body.sessionId, ownerId: owner.userId, computerId: null, title: 'seen' },
        }),
      ]);
      const [stored] = await log().read(owner.organizationId, { after: mine[0].seq - 1, limit: 1 });
      expect(stored).toEqual(mine[0]);
    } finally {
      t.app.get(EventEmitter2).off('session.created', record);
    }
  });

  it('writes the events of a one-statement command (adding a message) with the statement: the same shape, and none when it changes nothing', async () => {
    const session = await t.http().post('/api/v0/sessions').set(owner.auth).send({}).expect(201);
    const sessionId = session.body.sessionId as string;
    const { last } = await log().bounds(owner.organizationId);
    const added = await t
      .http()
      .post(`/api/v0/sessions/${sessionId}/messages`)
      .set(owner.auth)
      .set('x-request-id', 'one-statement')
      .send({ text: 'hi' })
      .expect(200);
    // A read settles first, so it finds the answer's events straight after the answer.
    const events = await log().read(owner.organizationId, { after: last, limit: 10 });
    const actor = {
      kind: 'user',
      userId: owner.userId,
      email: owner.email,
      role: 'owner',
      credential: 'api_key',
      credentialId: owner.apiKeyId,
      ip: '127.0.0.1',
      requestId: 'one-statement',
    };
    expect(events).toEqual([
      expect.objectContaining({
        seq: last + 1,
        type: 'message.added',
        sessionId,
        actor,
        data: { sessionId, messageId: added.body.messageId, role: 'user', authorId: owner.userId, computerId: null },
      }),
      expect.objectContaining({ seq: last + 2, type: 'session.status_changed', sessionId, actor, data: { sessionId, from: 'idle', to: 'pending' } }),
    ]);
    expect(events[0].occurredAt.getTime()).toBe(events[1].occurredAt.getTime());
    // A second message leaves the status as it is: no status event.
    await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'again' }).expect(200);
    expect((await log().read(owner.organizationId, { after: last + 2, limit: 10 })).map((e) => e.type)).toEqual(['message.added']);
    // No session (another organization's, or none): no message and no event.
    const stranger = await createUser(t, Role.Owner, await createOrganization(t));
    await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(stranger.auth).send({ text: 'not yours' }).expect(404);
    expect(await log().bounds(owner.organizationId)).toEqual({ oldest: 1, last: last + 3 });
    expect((await log().read(stranger.organizationId, { after: 0, limit: 10 })).map((e) => e.type)).not.toContain('message.added');
    // With an idempotency key the statement runs inside the key's transaction; a replay writes nothing.
    const send = () =>
      t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).set('Idempotency-Key', 'event-log-once').send({ text: 'once' }).expect(200);
    await send();
    await send();
    expect((await log().read(owner.organizationId, { after: last + 3, limit: 10 })).map((e) => e.type)).toEqual(['message.added']);
  });

  (serverUrl() ? it : it.skip)(
    'answers a write at its commit, without waiting for the numbering; a read of the log after the answer waits for it',
    async () => {
      const writer = await createUser(t, Role.Owner, await createOrganization(t));
      // Another connection holds the sequencer's lock, as a long run on another instance would.
      const holder = t.app.get(DataSource).createQueryRunner();
      await holder.startTransaction();
      await holder.query('SELECT pg_advisory_xact_lock($1)', [AdvisoryLock.EventSequencer]);
      let reading!: Promise<{ status: number; body: { events: Array<{ type: string; data: { sessionId?: string } }> } }>;
      let sessionId!: string;
      try {
        const created = await t.http().post('/api/v0/sessions').set(writer.auth).send({ title: 'not held' }).expect(201);
        sessionId = created.body.sessionId as string;
        const [row] = (await t.app
          .get(DataSource)
          .query(`SELECT seq FROM events WHERE organization_id = $1 AND type = 'session.created'`, [writer.organizationId])) as Array<{
          seq: string | null;
        }>;
        expect(row).toEqual({ seq: null });
        let answered = false;
        reading = t
          .http()
          .get('/api/v0/events?after=0')
          .set(writer.auth)
          .then((res) => ((answered = true), res));
        // The read settles first: its sequencer run queues for the lock the holder keeps, and the read waits with it.
        const queued = async () =>
          (
            (await t.app
              .get(DataSource)
              .query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`, [
                AdvisoryLock.EventSequencer,
              ])) as Array<{ n: number }>
          )[0].n > 0;
        await until(queued, 'the read to wait for the numbering');
        expect(answered).toBe(false);
      } finally {
        await holder.commitTransaction();
        await holder.release();
      }
      const page = await reading;
      expect(page.status).toBe(200);
      expect(page.body.events.filter((e) => e.type === 'session.created').map((e) => e.data.sessionId)).toEqual([sessionId]);
    },
  );

  it("forgets each organization's expired events oldest first, keeping every later one and other organizations'", async () => {
    const [a, b] = [await createUser(t, Role.Owner, await createOrganization(t)), await createUser(t, Role.Owner, await createOrganization(t))];
    for (const user of [a, b]) for (let i = 0; i < 3; i++) await t.http().post('/api/v0/sessions').set(user.auth).send({}).expect(201);
    const seqs = async (user: TestUser) => (await log().read(user.organizationId, { after: 0, limit: 100 })).map((e) => e.seq);
    const [aSeqs, bSeqs] = [await seqs(a), await seqs(b)];
    const age = (user: TestUser, upTo: number) =>
      t.app
        .get(DataSource)
        .query(`UPDATE events SET occurred_at = now() - interval '400 days' WHERE organization_id = $1 AND seq <= $2`, [user.organizationId, upTo]);
    await age(a, 2);
    await age(b, 1);
    expect(await log().forgetExpired()).toBeGreaterThanOrEqual(3);
    expect(await seqs(a)).toEqual(aSeqs.filter((seq) => seq > 2));
    expect(await seqs(b)).toEqual(bSeqs.filter((seq) => seq > 1));
    expect(await log().bounds(a.organizationId)).toEqual({ oldest: 3, last: aSeqs.at(-1) });
  });

  it('numbers events whose command committed but stopped before numbering them (a crash), at the next sweep', async () => {
    const org = await createOrganization(t);
    const emitted: AnyStoredEvent[] = [];
    const record = (event: AnyStoredEvent) => emitted.push(event);
    t.app.get(EventEmitter2).on('session.created', record);
    try {
      // What a command leaves when its process dies right after COMMIT: a written, unnumbered event.
      await t.app.get(DataSource).query(
        `INSERT INTO events (organization_id, id, type, occurred_at, session_id, actor, data)
         VALUES ($1, gen_random_uuid(), 'session.created', now(), NULL, NULL, $2::jsonb)`,
        [org.id, JSON.stringify({ sessionId: org.id, ownerId: org.id, computerId: null, title: 'orphan' })],
      );
      await until(async () => (await log().bounds(org.id)).last === 1, 'the sweep to number the orphaned event');
      const [numbered] = await log().read(org.id, { after: 0, limit: 10 });
      expect(numbered).toEqual(expect.objectContaining({ seq: 1, type: 'session.created', data: expect.objectContaining({ title: 'orphan' }) }));
      await until(() => emitted.some((e) => e.id === numbered.id), 'the numbered event to reach the listeners');
    } finally {
      t.app.get(EventEmitter2).off('session.created', record);
    }
  });

  describe('durable listeners', () => {
    const handled: string[] = [];
    /** Fails this many times on events of the organization named. */
    let failing = { organizationId: '', times: 0 };
    /** When each delivery of that organization's events began, and whether it failed. */
    const attempts: Array<{ at: number; failed: boolean }> = [];

    beforeAll(async () => {
      await t.app.get(DataSource).query(`CREATE TABLE IF NOT EXISTS test_durable_effects (event_id uuid PRIMARY KEY, seq bigint NOT NULL)`);
      t.app.get(DurableListeners).register({
        name: 'test.effects',
        types: ['session.created'],
        handle: async (manager: EntityManager, events: AnyStoredEvent[]) => {
          const attempt = { at: Date.now(), failed: false };
          if (events.some((event) => event.organizationId === failing.organizationId)) attempts.push(attempt);
          for (const event of events) {
            // A duplicate would break the primary key: exactly once.
            await manager.query(`INSERT INTO test_durable_effects (event_id, seq) VALUES ($1, $2)`, [event.id, event.seq]);
            if (failing.times > 0 && event.organizationId === failing.organizationId) {
              failing.times--;
              attempt.failed = true;
              throw new Error('the listener is down');
            }
          }
          handled.push(...events.map((event) => event.id));
        },
      });
    });

    it('handle every event once, in order, and retry a failure without losing the event', async () => {
      const org = await createUser(t, Role.Owner, await createOrganization(t));
      failing = { organizationId: org.organizationId, times: 2 };
      const started = Date.now();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await t.http().post('/api/v0/sessions').set(org.auth).send({}).expect(201)).body.sessionId as string);
      const events = (await log().read(org.organizationId, { after: 0, limit: 100 })).filter((e) => e.type === 'session.created');
      const checkpoint = async () =>
        (
          (await t.app
            .get(DataSource)
            .query(`SELECT seq::int AS seq, failures FROM event_checkpoints WHERE listener = 'test.effects' AND organization_id = $1`, [
              org.organizationId,
            ])) as Array<{ seq: number; failures: number }>
        )[0];
      // The handler runs inside the transaction that moves the checkpoint: wait for that commit, not for the handler.
      const last = events[events.length - 1].seq;
      await until(async () => (await checkpoint())?.seq === last, 'the listener to catch up after its failures', 20_000);
      expect(handled.filter((id) => events.some((e) => e.id === id))).toEqual(events.map((e) => e.id));
      expect(failing.times).toBe(0);
      // Backing off: 1 s after the first failure, 2 s after the second, however many events arrive meanwhile. Told by
      // when each delivery began, which a busy machine can only delay: without a back-off they would come at each
      // sweep (100 ms), and these bounds would fail however slow the machine.
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_500);
      const [first, second, third] = attempts;
      expect(attempts.slice(0, 3).map((a) => a.failed)).toEqual([true, true, false]);
      expect(second.at - first.at).toBeGreaterThanOrEqual(1_000 - 50);
      expect(third.at - second.at).toBeGreaterThanOrEqual(2_000 - 50);
      expect(await checkpoint()).toEqual({ seq: last, failures: 0 });
    });
  });
});

/** Several instances on one PostgreSQL database, as in production. */
(serverUrl() ? describe : describe.skip)('The event log on several instances (PostgreSQL)', () => {
  let database: TestDatabase;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    await (await startTestApp({}, database)).close();
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await database?.drop();
  });

  it('brings each instance the events committed on the others, and runs a durable effect once however many instances run it', async () => {
    const env = { EVENT_LISTENER_SWEEP_MS: '100', PROVISIONING_CONCURRENCY: '0' };
    const [a, b] = [await startTestApp(env, database), await startTestApp(env, database)];
    apps.push(a, b);
    await a.app.get(DataSource).query(`CREATE TABLE IF NOT EXISTS test_durable_effects (event_id uuid PRIMARY KEY, seq bigint NOT NULL)`);
    const handledBy = new Map<TestApp, string[]>([
      [a, []],
      [b, []],
    ]);
    const seenBy = new Map<TestApp, string[]>([
      [a, []],
      [b, []],
    ]);
    for (const app of [a, b]) {
      app.app.get(EventEmitter2).on('session.created', (event: AnyStoredEvent) => seenBy.get(app)!.push(event.id));
      app.app.get(DurableListeners).register({
        name: 'test.effects',
        types: ['session.created'],
        handle: async (manager, events) => {
          for (const event of events) await manager.query(`INSERT INTO test_durable_effects (event_id, seq) VALUES ($1, $2)`, [event.id, event.seq]);
          handledBy.get(app)!.push(...events.map((event) => event.id));
        },
      });
    }
    const owner = await createUser(a, Role.Owner, await createOrganization(a));
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).http().post('/api/v0/sessions').set(owner.auth).send({}).expect(201)));
    // Reading on a numbers what b committed too, if b's sequencer has not yet.
    const events = await a.app.get(EventLog).read(owner.organizationId, { after: 0, limit: 100 });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const all = events.filter((e) => e.type === 'session.created').map((e) => e.id);
    expect(all).toHaveLength(20);
    // Every instance's listeners see every event, wherever it was committed.
    await until(() => all.every((id) => seenBy.get(a)!.includes(id) && seenBy.get(b)!.includes(id)), 'both instances to see every event');
    await until(() => all.every((id) => [...handledBy.get(a)!, ...handledBy.get(b)!].includes(id)), 'the durable listener to handle every event');
    const handled = [...handledBy.get(a)!, ...handledBy.get(b)!].filter((id) => all.includes(id));
    expect(handled.sort()).toEqual([...all].sort());

    // Events committed while no instance listened (a crash between commit and emit) are handled by the next one to start.
    await Promise.all([a.close(), b.close()]);
    apps.length = 0;
    const c = await startTestApp({ ...env, LOG_LEVEL: 'silent' }, database);
    apps.push(c);
    await c.app.get(DataSource).transaction(async (manager) => {
      c.app.get(EventLog).raise(manager, {
        type: 'session.created',
        organizationId: owner.organizationId,
        data: { sessionId: owner.userId, ownerId: owner.userId, computerId: null, title: 'while down' },
      });
    });
    const late: string[] = [];
    c.app.get(DurableListeners).register({
      name: 'test.effects',
      types: ['session.created'],
      handle: async (manager, events) => {
        for (const event of events) await manager.query(`INSERT INTO test_durable_effects (event_id, seq) VALUES ($1, $2)`, [event.id, event.seq]);
        late.push(...events.map((event) => event.id));
      },
    });
    const effects = async () =>
      ((await c.app.get(DataSource).query(`SELECT count(*)::int AS count FROM test_durable_effects`)) as Array<{ count: number }>)[0].count;
    await until(async () => (await effects()) === 21, 'the event committed before its listener ran');
    expect(late).toHaveLength(1);
  });
});

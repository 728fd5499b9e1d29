import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { RETENTION_BATCH, SessionRetentionJob } from '../../src/modules/sessions/jobs/session-retention.job';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase, serverUrl } from '../utils/test-database';

const CONTROLS = '/api/v0/organization/enterprise-controls';
const DAY_MS = 86_400_000;

/** `sessionRetentionDays`: sessions with no activity for that many days are deleted, with their messages. */
describe('Session retention', () => {
  let t: TestApp;

  beforeAll(async () => {
    // An hour between scheduled sweeps: the tests sweep, or a revised retention does.
    t = await startTestApp();
  });

  afterAll(() => t.close());

  const db = () => t.app.get(DataSource);
  const sweep = () => t.app.get(SessionRetentionJob).sweep();

  async function session(user: TestUser, idleDays: number, text = 'hello'): Promise<string> {
    const created = await t
      .http()
      .post('/api/v0/sessions')
      .set(user.auth)
      .send({ title: `idle ${idleDays} days` })
      .expect(201);
    await t.http().post(`/api/v0/sessions/${created.body.sessionId}/messages`).set(user.auth).send({ text }).expect(200);
    await db().query(`UPDATE sessions SET updated_at = $2, created_at = $2 WHERE id = $1`, [created.body.sessionId, new Date(Date.now() - idleDays * DAY_MS)]);
    return created.body.sessionId;
  }

  async function exists(id: string): Promise<boolean> {
    const [row] = await db().query(
      `SELECT (SELECT count(*) FROM sessions WHERE id = $1)::int AS sessions, (SELECT count(*) FROM messages WHERE session_id = $1)::int AS messages`,
      [id],
    );
    if (row.sessions === 0) expect(row.messages).toBe(0);
    return row.sessions === 1;
  }

  async function retain(owner: TestUser, days: number | null) {
    await t
      .http()
      .patch(CONTROLS)
      .set(owner.auth)
      .send({ settings: { sessionRetentionDays: days } })
      .expect(200);
  }

  it("deletes the organization's sessions idle longer than the retention, with their messages, and keeps the rest", async () => {
    const owner = await createUser(t, Role.Owner);
    const outsider = await createUser(t, Role.Owner);
    const old = await session(owner, 31);
    const recent = await session(owner, 29);
    const othersOld = await session(outsider, 400);
    await retain(owner, 30);

    await sweep();
    expect(await exists(old)).toBe(false);
    await t.http().get(`/api/v0/sessions/${old}`).set(owner.auth).expect(404);
    expect(await exists(recent)).toBe(true);
    // An organization without a retention keeps everything.
    expect(await exists(othersOld)).toBe(true);
  });

  it('counts activity, not age: an old session with a recent message stays', async () => {
    const owner = await createUser(t, Role.Owner);
    const id = await session(owner, 90);
    await t.http().post(`/api/v0/sessions/${id}/messages`).set(owner.auth).send({ text: 'still here' }).expect(200);
    await retain(owner, 30);
    await sweep();
    expect(await exists(id)).toBe(true);
  });

  it('leaves a session an agent holds a live turn on', async () => {
    const owner = await createUser(t, Role.Owner);
    const id = await session(owner, 60);
    await db().query(`UPDATE sessions SET status = 'running', lease_expires_at = now() + interval '1 hour' WHERE id = $1`, [id]);
    await retain(owner, 30);
    await sweep();
    expect(await exists(id)).toBe(true);
  });

  it('stops deleting once the retention is removed', async () => {
    const owner = await createUser(t, Role.Owner);
    await retain(owner, 30);
    await retain(owner, null);
    const id = await session(owner, 365);
    await sweep();
    expect(await exists(id)).toBe(true);
  });

  it('deletes more sessions than one batch holds, in batches', async () => {
    const org = await createOrganization(t);
    const owner = await createUser(t, Role.Owner, org);
    const count = RETENTION_BATCH * 2 + 37;
    await db().query(
      `INSERT INTO sessions (id, organization_id, owner_id, created_at, updated_at)
       SELECT gen_random_uuid(), $1, $2, now() - interval '10 days', now() - interval '10 days' FROM generate_series(1, $3)`,
      [org.id, owner.userId, count],
    );
    await retain(owner, 7);
    await sweep();
    const [{ n }] = await db().query(`SELECT count(*)::int AS n FROM sessions WHERE organization_id = $1`, [org.id]);
    expect(n).toBe(0);
  });

  it("sweeps at once when an organization's retention is revised, without waiting for the schedule", async () => {
    const owner = await createUser(t, Role.Owner);
    const id = await session(owner, 10);
    await retain(owner, 9);
    const deadline = Date.now() + 5_000;
    while (await exists(id)) {
      if (Date.now() > deadline) throw new Error('the revised retention did not delete the session');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await t.http().get(`/api/v0/sessions/${id}`).set(owner.auth).expect(404);
  });

  it('runs on its own schedule', async () => {
    const database = await createTestDatabase();
    const app = await startTestApp({ RETENTION_SWEEP_MS: '200' }, database);
    try {
      const owner = await createUser(app, Role.Owner);
      const created = await app.http().post('/api/v0/sessions').set(owner.auth).send({}).expect(201);
      await app.app
        .get(DataSource)
        .query(`UPDATE sessions SET created_at = now() - interval '3 days', updated_at = now() - interval '3 days' WHERE id = $1`, [created.body.sessionId]);
      await app
        .http()
        .patch(CONTROLS)
        .set(owner.auth)
        .send({ settings: { sessionRetentionDays: 2 } })
        .expect(200);
      const deadline = Date.now() + 10_000;
      while ((await app.http().get(`/api/v0/sessions/${created.body.sessionId}`).set(owner.auth)).status !== 404) {
        if (Date.now() > deadline) throw new Error('the scheduled sweep did not delete the session');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await app.close();
      await database.drop();
    }
  });

  (serverUrl() ? it : it.skip)('two instances sweeping at once delete each session once, without waiting on each other (PostgreSQL)', async () => {
    const database = await createTestDatabase();
    const a = await startTestApp({}, database);
    const b = await startTestApp({}, database);
    try {
      const org = await createOrganization(a);
      const owner = await createUser(a, Role.Owner, org);
      const count = RETENTION_BATCH * 4;
      await a
        .http()
        .patch(CONTROLS)
        .set(owner.auth)
        .send({ settings: { sessionRetentionDays: 30 } })
        .expect(200);
      // The sweeps the revision started on both instances end first: then the two below find all the work.
      await Promise.all([a.app.get(SessionRetentionJob).sweep(), b.app.get(SessionRetentionJob).sweep()]);
      await a.app.get(DataSource).query(
        `INSERT INTO sessions (id, organization_id, owner_id, created_at, updated_at)
         SELECT gen_random_uuid(), $1, $2, now() - interval '40 days', now() - interval '40 days' FROM generate_series(1, $3)`,
        [org.id, owner.userId, count],
      );
      const [byA, byB] = await Promise.all([a.app.get(SessionRetentionJob).sweep(), b.app.get(SessionRetentionJob).sweep()]);
      // Other test files' organizations are in other databases: everything swept here was this one's.
      expect(byA + byB).toBe(count);
      const [{ n }] = await a.app.get(DataSource).query(`SELECT count(*)::int AS n FROM sessions WHERE organization_id = $1`, [org.id]);
      expect(n).toBe(0);
    } finally {
      await a.close();
      await b.close();
      await database.drop();
    }
  });
});

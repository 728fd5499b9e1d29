import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { IdempotencyService } from '../../src/platform/idempotency';
import { createUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

/** How long an Idempotency-Key is remembered, and what forgetting it means. */
describe('idempotency key retention', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });

  afterAll(() => t.close());

  it('a key is forgotten after 24 hours: the same key then starts a new request instead of a 422', async () => {
    const owner = await createUser(t, Role.Owner);
    const create = (title: string) => t.http().post('/api/v0/sessions').set(owner.auth).set('Idempotency-Key', 'retention-key').send({ title });
    expect((await create('first')).status).toBe(201);
    expect((await create('second')).status).toBe(422);

    const db = t.app.get(DataSource);
    await db.query(
      `INSERT INTO idempotency_keys (organization_id, user_id, key, request_hash, status_code, response, created_at)
                    VALUES ($1, $2, 'recent-key', 'x', 201, '{}', now() - interval '23 hours')`,
      [owner.organizationId, owner.userId],
    );
    await db.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'retention-key'`);
    expect(await t.app.get(IdempotencyService).forgetExpiredKeys()).toBe(1);

    const again = await create('second');
    expect([again.status, again.body.title, again.headers['idempotent-replayed']]).toEqual([201, 'second', undefined]);
    const kept = (await db.query(`SELECT key FROM idempotency_keys WHERE user_id = $1 ORDER BY key`, [owner.userId])) as Array<{ key: string }>;
    expect(kept.map((row) => row.key)).toEqual(['recent-key', 'retention-key']);
  });
});

// The organizations every loader shares: the bench org (where the scenarios call as its owner) and others around it.
import { createHash, randomBytes, randomUUID } from 'node:crypto';

export const BENCH_ORG_SLUG = 'bench';
const BENCH_MEMBERS = 9;
// Other organizations hold the rest of the rows, so the bench org's queries run on a table shared with others.
const OTHER_ORGS = 100;

/** Creates the organizations and users once (idempotent, so a reused database keeps them). */
export async function ensureFixtures(db) {
  if (!(await db.query('SELECT 1 FROM organizations WHERE slug = $1', [BENCH_ORG_SLUG])).rowCount) {
    await db.query('BEGIN');
    await db.query(
      `WITH o AS (
         INSERT INTO organizations (id, slug, name, features)
         VALUES (gen_random_uuid(), $1, 'Bench Org', '{"messageHistory": true}') RETURNING id)
       INSERT INTO users (id, organization_id, email, name, role)
       SELECT gen_random_uuid(), o.id, 'user' || n || '@bench.example', 'Bench User ' || n, CASE n WHEN 0 THEN 'owner' ELSE 'member' END
       FROM o, generate_series(0, $2::int) n`,
      [BENCH_ORG_SLUG, BENCH_MEMBERS],
    );
    await db.query(
      `WITH o AS (
         INSERT INTO organizations (id, slug, name, features)
         SELECT gen_random_uuid(), 'bench-other-' || n, 'Other Org ' || n, '{"messageHistory": true}'
         FROM generate_series(1, $1::int) n RETURNING id, slug)
       INSERT INTO users (id, organization_id, email, name, role)
       SELECT gen_random_uuid(), o.id, 'owner@' || o.slug || '.example', 'Owner of ' || o.slug, 'owner' FROM o`,
      [OTHER_ORGS],
    );
    await db.query('COMMIT');
  }
  const { rows } = await db.query(
    `SELECT o.id, o.slug = $1 AS bench, array_agg(u.id ORDER BY u.role <> 'owner', u.email) AS user_ids
     FROM organizations o JOIN users u ON u.organization_id = o.id
     WHERE o.slug = $1 OR o.slug LIKE 'bench-other-%'
     GROUP BY o.id ORDER BY o.slug`,
    [BENCH_ORG_SLUG],
  );
  const bench = rows.find((r) => r.bench);
  return {
    benchOrg: { id: bench.id, ownerId: bench.user_ids[0], userIds: bench.user_ids },
    otherOrgs: rows.filter((r) => !r.bench).map((r) => ({ id: r.id, ownerId: r.user_ids[0] })),
  };
}

/** A new key for the bench org's owner, made as the app makes them: only its SHA-256 is stored. */
export async function createApiKey(db, fixtures) {
  const key = 'apk_' + randomBytes(32).toString('base64url');
  await db.query(`INSERT INTO api_keys (id, organization_id, user_id, name, prefix, key_hash) VALUES ($1, $2, $3, 'bench', $4, $5)`, [
    randomUUID(),
    fixtures.benchOrg.id,
    fixtures.benchOrg.ownerId,
    key.slice(0, 12),
    createHash('sha256').update(key).digest('hex'),
  ]);
  return key;
}

// The sessions endpoints, and the baseline they are measured against: the same primary-key read without NestJS.
import { createRequire } from 'node:module';
import { join } from 'node:path';

const DEEP_ITEM = 500_000;
const FIRST_PAGE = 'list sessions, first page';

/** Runs once before these scenarios: picks the sessions to read and write, and the cursor of a deep page. */
export async function setup({ db, fixtures, root, log }) {
  const org = fixtures.benchOrg.id;
  // A fixed pseudo-random sample, so repeated runs read the same sessions (and compare like with like).
  const ids = (await db.query('SELECT id FROM sessions WHERE organization_id = $1 ORDER BY md5(id::text) LIMIT 10000', [org])).rows.map((r) => r.id);
  if (ids.length === 0) throw new Error('the bench org has no sessions');
  const total = (await db.query('SELECT count(*)::int AS n FROM sessions WHERE organization_id = $1', [org])).rows[0].n;
  // Item 500,000 of the newest-first list, or as deep as a small smoke-test database allows.
  const offset = Math.max(0, Math.min(DEEP_ITEM, total - 1000));
  const { rows } = await db.query('SELECT created_at, id FROM sessions WHERE organization_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1', [
    org,
    offset,
  ]);
  const { encodeCursor } = createRequire(import.meta.url)(join(root, 'dist/platform/http/cursor.js'));
  log(`deep page: the cursor of item ${offset.toLocaleString('en')} of the bench org's ${total.toLocaleString('en')} sessions`);
  return { org, ids, deepCursor: encodeCursor('sessions', [rows[0].created_at.getTime(), rows[0].id]) };
}

const pick = (ids) => ids[Math.floor(Math.random() * ids.length)];
const MESSAGE = JSON.stringify({
  text: 'Please run the test suite again with the new configuration and tell me which tests still fail, with the first error of each.',
});

export const scenarios = [
  {
    name: 'baseline: Fastify + pg, no NestJS, no auth',
    server: 'baseline',
    baseline: true,
    request: (d) => ({ path: `/organizations/${d.org}/sessions/${pick(d.ids)}` }),
  },
  // Every scenario here is also held to its own same-work baseline (run.mjs: ≥ 0.7× its req/s, ≤ 1.6× its CPU
  // per request); the targets below are the rest of issue 41's, and earlier ones.
  {
    name: 'get session',
    target: { minBaselineRatio: 0.8 },
    request: (d) => ({ path: `/api/v0/sessions/${pick(d.ids)}` }),
  },
  {
    name: FIRST_PAGE,
    target: { minBaselineRatio: 0.7 },
    request: () => ({ path: '/api/v0/sessions?limit=20' }),
  },
  {
    name: 'list sessions, deep page',
    target: { minBaselineRatio: 0.7, maxMeanLatencyRatio: { of: FIRST_PAGE, ratio: 1.1 } },
    request: (d) => ({ path: `/api/v0/sessions?limit=20&cursor=${d.deepCursor}` }),
  },
  {
    name: 'list messages',
    target: { minBaselineRatio: 0.7 },
    request: (d) => ({ path: `/api/v0/sessions/${pick(d.ids)}/messages?limit=20` }),
  },
  {
    // Random sessions among 10,000, so concurrent writers rarely wait for the same session row.
    name: 'add message',
    target: { minBaselineRatio: 0.5, maxP99Ms: 40, maxWalBytesPerRequest: 1536 },
    request: (d) => ({
      method: 'POST',
      path: `/api/v0/sessions/${pick(d.ids)}/messages`,
      headers: { 'content-type': 'application/json' },
      body: MESSAGE,
    }),
  },
];

// The analytics endpoints on the large and the small organization (same active user-days, 100x the facts), and the
// rollup: latency of single requests, one at a time, since the question is what one request costs, not throughput.
import { createApiKey } from '../lib/fixtures.mjs';
import { request } from '../lib/http.mjs';
import { ORGS } from '../load/analytics.mjs';

export const name = 'analytics';

const RANGE_DAYS = 90;
const PAGE_LIMIT = 100;
// t(small) / t(large) at least this: the cost must not grow with the number of raw facts.
const MIN_RATIO = 0.7;
const DAY_MS = 86_400_000;

const ROLLUP_ALL = 'analytics rollup, all days';
const ROLLUP_DAY = 'analytics rollup, one day';
const ENDPOINTS = [
  { name: 'analytics tokens', path: 'tokens' },
  { name: 'analytics tools', path: 'tools' },
  { name: 'analytics activity', path: 'activity' },
  { name: 'analytics productivity', path: 'productivity' },
  { name: 'analytics users, first page', path: 'users', limit: PAGE_LIMIT },
  { name: 'analytics users, all pages', path: 'users', limit: PAGE_LIMIT, allPages: true },
];

/** Whether BENCH_SCENARIOS (`only`, lower-case parts of names) asks for any of these measurements. */
export function selected(only) {
  return [ROLLUP_ALL, ROLLUP_DAY, ...ENDPOINTS.map((e) => e.name)].some((n) => wanted(only, n));
}

const wanted = (only, measurement) => !only || only.some((part) => measurement.includes(part));

/**
 * Runs after the scenarios, with the app started (and its start-up rollup done). Resolves to the results, with
 * `pass` and `markdown`; null when nothing was loaded (BENCH_ANALYTICS_FACTS=0).
 */
export async function run({ db, app, env, only, log }) {
  const runs = Number(env.BENCH_ANALYTICS_RUNS ?? 7);
  if (!(Number.isInteger(runs) && runs >= 1)) throw new Error(`BENCH_ANALYTICS_RUNS: a whole number, at least 1, got ${env.BENCH_ANALYTICS_RUNS}`);
  const loaded = (await db.query(`SELECT params, summary FROM bench.loads WHERE name = 'analytics'`)).rows[0];
  if (!loaded || loaded.summary.skipped) {
    log('analytics: no facts loaded (BENCH_ANALYTICS_FACTS=0), skipped');
    return null;
  }
  const { summary, params } = loaded;
  const orgs = await organizations(db);
  const large = { ...orgs[ORGS.large], facts: summary.facts[ORGS.large] };
  const small = { ...orgs[ORGS.small], facts: summary.facts[ORGS.small] };
  const day = { ...orgs[ORGS.day], facts: summary.facts[ORGS.day] };
  const end = summary.lastDay;
  const start = new Date(Date.parse(end) - (RANGE_DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
  log(
    `analytics: ${large.facts.toLocaleString('en')} and ${small.facts.toLocaleString('en')} facts over ${summary.firstDay}..${end}; ranges ${start}..${end}; ${runs} runs after a warm-up`,
  );

  // Nothing may be left to roll up (the app's start-up run did it; this waits for it if it is still going).
  for (const org of [large, small, day]) await rollUp(app, org);

  const rollups = [];
  if (wanted(only, ROLLUP_ALL)) {
    // Every day again from its facts: the days are marked dirty as late facts would mark them.
    for (const org of [large, small]) {
      const days = await markDirty(db, org, summary.firstDay, end);
      const r = await rollUp(app, org);
      const ok = r.days.length === days;
      rollups.push({
        name: `${ROLLUP_ALL} (${org.slug}, ${org.facts.toLocaleString('en')} facts)`,
        organization: org.slug,
        facts: org.facts,
        days,
        seconds: r.ms / 1000,
        msPerDay: r.ms / days,
        verdict: ok ? '—' : `FAILED (rolled up ${r.days.length} days, not ${days})`,
      });
      log(`${rollups.at(-1).name}: ${days} days in ${(r.ms / 1000).toFixed(1)} s (${(r.ms / days).toFixed(1)} ms a day)`);
    }
  }
  if (wanted(only, ROLLUP_DAY)) {
    const times = [];
    let failure = null;
    for (let i = 0; i <= runs; i++) {
      await markDirty(db, day, end, end);
      const r = await rollUp(app, day);
      if (r.days.length !== 1 || r.days[0] !== end) failure ??= `rolled up ${JSON.stringify(r.days)}, not ["${end}"]`;
      if (i > 0) times.push(r.ms);
    }
    const stats = summarize(times);
    rollups.push({
      name: `${ROLLUP_DAY} (${day.facts.toLocaleString('en')} facts, ${summary.dayUsers} users)`,
      organization: day.slug,
      facts: day.facts,
      days: 1,
      seconds: stats.median / 1000,
      msPerDay: stats.median,
      runs: stats,
      verdict: failure ? `FAILED (${failure})` : '—',
    });
    log(`${rollups.at(-1).name}: median ${stats.median.toFixed(1)} ms, p95 ${stats.p95.toFixed(1)} ms`);
  }

  // The rollup rewrote these tables: measure with fresh statistics and visibility maps, as autovacuum leaves them
  // a minute later, rather than let whichever endpoint runs first pay for it (or plan on empty-table statistics).
  await db.query('VACUUM ANALYZE analytics_days, analytics_user_days');

  const endpoints = [];
  for (const endpoint of ENDPOINTS.filter((e) => wanted(only, e.name))) {
    const samples = { large: [], small: [] };
    // A warm-up, then the runs, alternating which organization goes first so that drift hurts neither.
    for (let i = 0; i <= runs; i++) {
      for (const key of i % 2 === 0 ? ['large', 'small'] : ['small', 'large']) {
        const sample = await call(app, key === 'large' ? large : small, endpoint, start, end);
        if (i > 0) samples[key].push(sample);
      }
    }
    // As a browser asks (accept-encoding): what goes over the wire, and the time with the compression in it.
    const compressed = [];
    for (let i = 0; i <= runs; i++) {
      const sample = await call(app, large, endpoint, start, end, { 'accept-encoding': 'br, gzip' });
      if (i > 0) compressed.push(sample);
    }
    const result = { name: endpoint.name, compressed: { ...summarize(compressed.map((x) => x.ms)), bytes: compressed[0].bytes } };
    for (const key of ['large', 'small']) {
      const org = key === 'large' ? large : small;
      const s = samples[key];
      const failures = [...new Set(s.map((x) => x.failure).filter(Boolean))];
      result[key] = {
        organization: org.slug,
        facts: org.facts,
        ...summarize(s.map((x) => x.ms)),
        bytes: s[0].bytes,
        rows: s[0].rows,
        ...(endpoint.allPages
          ? { pages: s[0].pages, firstPageMs: summarize(s.map((x) => x.firstMs)).median, lastPageMs: summarize(s.map((x) => x.lastMs)).median }
          : {}),
        failure: failures.join('; ') || null,
      };
      if (endpoint.allPages && !result[key].failure) {
        // Every user with a day in the range on exactly one page.
        const users = s[0].users;
        const expected = await usersInRange(db, org, start, end);
        if (users.distinct !== users.rows || users.distinct !== expected) {
          result[key].failure = `the pages held ${users.rows} users, ${users.distinct} distinct, of ${expected}`;
        }
      }
    }
    result.ratio = result.small.median / result.large.median;
    result.target = `t(${short(small.facts)}) / t(${short(large.facts)}) ≥ ${MIN_RATIO}`;
    const failure = result.large.failure ?? result.small.failure;
    result.verdict = failure
      ? `FAILED (${failure})`
      : result.large.rows !== result.small.rows
        ? `FAILED (rows differ: ${result.large.rows} / ${result.small.rows}; the organizations should have the same user-days)`
        : result.ratio >= MIN_RATIO
          ? 'pass'
          : 'fail';
    endpoints.push(result);
    log(
      `${endpoint.name}: ${short(large.facts)} facts median ${result.large.median.toFixed(1)} ms, ${short(small.facts)} median ${result.small.median.toFixed(1)} ms, ratio ${result.ratio.toFixed(2)}${failure ? `, FAILED: ${failure}` : ''}`,
    );
  }

  const results = {
    range: { startDate: start, endDate: end, days: RANGE_DAYS },
    runs,
    minRatio: MIN_RATIO,
    loaded: { params, summary },
    rollups,
    endpoints,
  };
  results.pass = [...rollups, ...endpoints].every((r) => ['pass', '—'].includes(r.verdict));
  results.markdown = markdown(results, large, small);
  return results;
}

async function organizations(db) {
  const { rows } = await db.query(
    `SELECT o.slug, o.id, u.id AS owner_id FROM organizations o JOIN users u ON u.organization_id = o.id AND u.role = 'owner'
     WHERE o.slug = ANY($1)`,
    [Object.values(ORGS)],
  );
  const orgs = {};
  for (const row of rows) {
    const apiKey = await createApiKey(db, { benchOrg: { id: row.id, ownerId: row.owner_id } });
    orgs[row.slug] = { slug: row.slug, id: row.id, headers: { authorization: `Bearer ${apiKey}` } };
  }
  for (const slug of Object.values(ORGS)) if (!orgs[slug]) throw new Error(`analytics: no organization ${slug} with an owner`);
  return orgs;
}

/** Marks the organization's days as the rollup marks days with new facts; resolves to how many days. */
async function markDirty(db, org, from, to) {
  await db.query(
    `INSERT INTO analytics_dirty_days (organization_id, day) SELECT $1, d::date FROM generate_series($2::date, $3::date, interval '1 day') d
     ON CONFLICT DO NOTHING`,
    [org.id, from, to],
  );
  return (Date.parse(to) - Date.parse(from)) / DAY_MS + 1;
}

/** The owner's trigger: rolls up the organization's pending closed days (after a run in progress). */
async function rollUp(app, org) {
  const res = await request(`${app.url}/api/v1/analytics/rollup`, { method: 'POST', headers: org.headers });
  if (res.status !== 200) throw new Error(`POST /api/v1/analytics/rollup (${org.slug}) answered ${res.status}: ${res.body.slice(0, 300)}`);
  return { days: JSON.parse(res.body).data.rolled_up_days, ms: res.ms };
}

/** One measured call: one request, or every page of the users endpoint one after the other. */
async function call(app, org, endpoint, start, end, extraHeaders = {}) {
  let path = `/api/v1/analytics/${endpoint.path}?startDate=${start}&endDate=${end}${endpoint.limit ? `&limit=${endpoint.limit}` : ''}`;
  const sample = { ms: 0, bytes: 0, rows: 0, pages: 0, failure: null, users: { rows: 0, distinct: 0 } };
  const seen = new Set();
  let previousUser = null;
  for (;;) {
    const res = await request(app.url + path, { headers: { ...org.headers, ...extraHeaders } });
    sample.ms += res.ms;
    sample.bytes += res.bytes;
    sample.pages += 1;
    if (sample.pages === 1) sample.firstMs = res.ms;
    sample.lastMs = res.ms;
    if (res.status !== 200) {
      sample.failure = `${res.status}: ${res.body.slice(0, 200)}`;
      return sample;
    }
    const body = JSON.parse(res.body);
    sample.rows += body.data.length;
    if (!endpoint.allPages) return sample;
    // Rows come by user then day: count each user's run of rows once, per page (a user on two pages counts twice).
    previousUser = null;
    for (const row of body.data) {
      if (row.user_id === previousUser) continue;
      previousUser = row.user_id;
      sample.users.rows += 1;
      seen.add(row.user_id);
    }
    sample.users.distinct = seen.size;
    if (!body.meta.has_more) return sample;
    path = `/api/v1/analytics/users?startDate=${start}&endDate=${end}&limit=${endpoint.limit}&cursor=${body.meta.next_cursor}`;
  }
}

async function usersInRange(db, org, start, end) {
  const { rows } = await db.query('SELECT count(DISTINCT user_id)::int AS n FROM analytics_user_days WHERE organization_id = $1 AND day BETWEEN $2 AND $3', [
    org.id,
    start,
    end,
  ]);
  return rows[0].n;
}

/** Median and nearest-rank p95 of the times (ms). */
function summarize(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const rank = (p) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
  const middle = sorted.length / 2;
  const median = sorted.length % 2 ? sorted[Math.floor(middle)] : (sorted[middle - 1] + sorted[middle]) / 2;
  return { median, p95: rank(95), min: sorted[0], max: sorted.at(-1), times: sorted };
}

/** 10,000,000 → 10M, 100,000 → 100k. */
function short(n) {
  if (n >= 1e6 && n % 1e5 === 0) return `${n / 1e6}M`;
  if (n >= 1e3 && n % 100 === 0) return `${n / 1e3}k`;
  return n.toLocaleString('en');
}

function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i]).length)));
  const line = (row) => `| ${row.map((cell, i) => String(cell).padEnd(widths[i])).join(' | ')} |`;
  return [line(rows[0]), line(widths.map((w) => '-'.repeat(w))), ...rows.slice(1).map(line)].join('\n');
}

function markdown({ range, runs, rollups, endpoints, loaded }, large, small) {
  const ms = (v) => v.toFixed(1);
  const kb = (b) => (b >= 10_240 ? `${Math.round(b / 1024).toLocaleString('en')} kB` : `${b.toLocaleString('en')} B`);
  const L = short(large.facts);
  const S = short(small.facts);
  const lines = [
    `## Analytics (${range.startDate}..${range.endDate}, ${range.days} days; median and p95 of ${runs} runs after a warm-up, one request at a time)`,
  ];
  if (endpoints.length) {
    lines.push(
      '',
      table([
        [
          'endpoint',
          `${L} median ms`,
          `${L} p95 ms`,
          `${S} median ms`,
          `${S} p95 ms`,
          'rows',
          `bytes ${L} / ${S}`,
          `${L} compressed: median ms, bytes`,
          `t(${S}) / t(${L})`,
          'target',
          'result',
        ],
        ...endpoints.map((e) => [
          e.name.replace('analytics ', '') + (e.large.pages ? ` (${e.large.pages} pages)` : ''),
          ms(e.large.median),
          ms(e.large.p95),
          ms(e.small.median),
          ms(e.small.p95),
          e.large.rows === e.small.rows ? e.large.rows.toLocaleString('en') : `${e.large.rows} / ${e.small.rows}`,
          `${kb(e.large.bytes)} / ${kb(e.small.bytes)}`,
          `${ms(e.compressed.median)}, ${kb(e.compressed.bytes)}`,
          e.ratio.toFixed(2),
          `≥ ${MIN_RATIO}`,
          e.verdict,
        ]),
      ]),
    );
  }
  if (rollups.length) {
    lines.push(
      '',
      table([
        ['rollup (POST /api/v1/analytics/rollup)', 'days', 'seconds', 'ms a day', 'result'],
        ...rollups.map((r) => [
          r.name.replace('analytics ', ''),
          r.days,
          r.seconds.toFixed(2),
          ms(r.msPerDay) + (r.runs ? ` (median; p95 ${ms(r.runs.p95)})` : ''),
          r.verdict,
        ]),
      ]),
    );
  }
  const s = loaded.summary;
  const paged = endpoints.filter((e) => e.large.pages);
  lines.push(
    '',
    `- Data: ${s.activeUserDays.toLocaleString('en')} active user-days (${loaded.params.activeUsers} of ${loaded.params.users.toLocaleString('en')} users a day, ${s.firstDay}..${s.lastDay}) in both organizations, ` +
      `${s.tokenUsageRows.toLocaleString('en')} token usage rows each; ${Object.entries(s.facts)
        .map(([slug, n]) => `${slug} ${n.toLocaleString('en')} facts`)
        .join(', ')}`,
    ...paged.map(
      (e) =>
        `- ${e.name.replace('analytics ', '')}: first page ${ms(e.large.firstPageMs)} / ${ms(e.small.firstPageMs)} ms, last page ${ms(e.large.lastPageMs)} / ${ms(e.small.lastPageMs)} ms (${L} / ${S}, medians)`,
    ),
  );
  return lines.join('\n');
}

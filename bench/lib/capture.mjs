// The same-work baselines: which statements the app runs for one request of a scenario, and with which values, so
// that bare Fastify + `pg` (baseline-server.mjs) can run exactly those for the same request. See bench/README.md.
import { Buffer } from 'node:buffer';
import autocannon from 'autocannon';
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { request } from './http.mjs';

/**
 * Requests of the counting run (concurrent, as measured: work the app batches or caches shows fewer calls than
 * requests) and of the logged run (one at a time, between markers: one request's statements in order).
 */
export const COUNTED_REQUESTS = 500;
export const LOGGED_REQUESTS = 60;
const MARK = 'bench_same_work_mark';
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const TIMESTAMP = '\\d{4}-\\d{2}-\\d{2}[ T]\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?(?:Z|[+-]\\d{2}(?::?\\d{2})?)?';
// Made-up tokens of other shapes: `req_` and 16 or more letters or digits (request ids), 24 or more hex digits.
const PREFIXED = '\\b[A-Za-z]+_[0-9A-Za-z]{16,}\\b';
const HEX = '\\b[0-9a-f]{24,}\\b';
const TOKEN = new RegExp(`${UUID}|${TIMESTAMP}|${PREFIXED}|${HEX}`, 'gi');
const IS_UUID = new RegExp(`^${UUID}$`, 'i');
const IS_TIMESTAMP = new RegExp(`^${TIMESTAMP}$`, 'i');
const TRANSACTION = /^\s*(BEGIN|START TRANSACTION|COMMIT|END|ROLLBACK)\b/i;

/**
 * Makes the cluster ready to capture: pg_stat_statements created (its library is preloaded in a cluster of ours,
 * lib/postgres.mjs), statement logging off (a capture that died may have left it on in a reused cluster).
 * Resolves to null when capturing is possible, else why not.
 */
export async function prepareCapture(pool, database) {
  if (!database.jsonLog) return 'needs the bench’s own PostgreSQL cluster (its log and pg_stat_statements), not BENCH_DATABASE_URL';
  const { rows } = await pool.query(`SELECT current_setting('shared_preload_libraries') AS libraries`);
  if (!rows[0].libraries.split(',').some((l) => l.trim() === 'pg_stat_statements')) return 'pg_stat_statements is not installed with this PostgreSQL';
  await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  await setStatementLogging(pool, false);
  return null;
}

async function setStatementLogging(pool, on) {
  await pool.query(on ? 'ALTER SYSTEM SET log_min_duration_statement = 0' : 'ALTER SYSTEM RESET log_min_duration_statement');
  await pool.query('SELECT pg_reload_conf()');
}

/**
 * For each scenario, two runs against the app. Counting: COUNTED_REQUESTS requests from `connections` clients at once,
 * as measured, after which pg_stat_statements says which statements ran a whole number of times per request (within
 * 10%): the request's own. The app's background jobs, its 1 s caches and whatever it batches across requests (the
 * events' numbering) run theirs far less often. Logging: LOGGED_REQUESTS requests one at a time, each followed by a
 * marker statement on a connection of our own, with every statement logged: between two markers, one request's
 * statements in order, with their values. Resolves to a plan per scenario (`{ scenario, statements, ... }`, or
 * `{ scenario, error }`), with the requests logged, to verify the plans with.
 */
export async function captureScenarios({ pool, database, app, apiKey, scenarios, connections, log }) {
  const counted = new Map();
  for (const scenario of scenarios) {
    try {
      counted.set(scenario.name, await countStatements({ pool, app, apiKey, scenario, connections }));
    } catch (error) {
      counted.set(scenario.name, { error: error.message });
    }
  }
  const marker = new pg.Client({ connectionString: database.url });
  await marker.connect();
  await setStatementLogging(pool, true);
  const plans = [];
  try {
    // The reload reaches each backend at its next command: wait until a statement of ours is logged.
    await waitForLogged(database.jsonLog, marker, -2);
    for (const scenario of scenarios) {
      const count = counted.get(scenario.name);
      try {
        if (count.error) throw new Error(count.error);
        plans.push(await logStatements({ database, app, apiKey, scenario, marker, count }));
      } catch (error) {
        plans.push({ scenario: scenario.name, error: error.message });
      }
      const plan = plans.at(-1);
      log(
        plan.error
          ? `same work: ${scenario.name}: capture failed: ${plan.error}`
          : `same work: ${scenario.name}: ${plan.statements.length} statement(s) a request (${plan.agreeing} of ${plan.requests.length} logged requests alike)`,
      );
    }
  } finally {
    await setStatementLogging(pool, false).catch(() => undefined);
    await marker.end();
  }
  return plans;
}

async function mark(marker, n) {
  await marker.query(`SELECT $1::int AS ${MARK}`, [n]);
}

async function waitForLogged(file, marker, n) {
  const offset = size(file);
  for (let i = 0; i < 100; i++) {
    await mark(marker, n);
    await sleep(50);
    if (readRecords(file, offset).some((r) => r.mark === n)) return;
  }
  throw new Error(`statement logging did not start (no marker in ${file})`);
}

/** The counting run: each statement's calls and rows per request, and those that ran a whole number of times a request. */
async function countStatements({ pool, app, apiKey, scenario, connections }) {
  const headers = { authorization: `Bearer ${apiKey}` };
  const expectStatus = scenario.expectStatus ?? 200;
  await pool.query('SELECT pg_stat_statements_reset()');
  const r = await autocannon({
    url: app.url,
    connections,
    amount: COUNTED_REQUESTS,
    requests: [
      {
        setupRequest: (req) => {
          const next = scenario.request(scenario.data);
          return { ...req, method: next.method ?? 'GET', path: next.path, headers: { ...headers, ...next.headers }, body: next.body };
        },
      },
    ],
  });
  const codes = Object.entries(r.statusCodeStats).map(([code, { count }]) => [Number(code), count]);
  const n = codes.reduce((sum, [, count]) => sum + count, 0);
  const unexpected = codes.filter(([code]) => code !== expectStatus);
  if (n === 0 || unexpected.length || r.errors) throw new Error(`the counting run answered ${JSON.stringify(Object.fromEntries(codes))}, ${r.errors} errors`);
  const { rows } = await pool.query(
    `SELECT queryid::text AS id, calls::float8 AS calls, rows::float8 AS rows, query FROM pg_stat_statements
     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'`,
  );
  const perRequest = new Map(
    rows
      .filter((s) => Math.round(s.calls / n) >= 1 && Math.abs(s.calls - Math.round(s.calls / n) * n) <= 0.1 * n)
      .map((s) => [s.id, { ...s, callsPerRequest: s.calls / n, rowsPerCall: s.rows / s.calls }]),
  );
  // What else ran meanwhile (the app's background work after the requests: numbering, listeners, jobs), per request.
  const besides = rows
    .filter((s) => !perRequest.has(s.id))
    .map((s) => ({ callsPerRequest: Math.round((s.calls / n) * 1000) / 1000, text: s.query.replace(/\s+/g, ' ').slice(0, 160) }))
    .sort((a, b) => b.callsPerRequest - a.callsPerRequest);
  return { requests: n, perRequest, besides };
}

/** The logging run: one request's statements in order, with where each value came from. */
async function logStatements({ database, app, apiKey, scenario, marker, count }) {
  const requests = Array.from({ length: LOGGED_REQUESTS }, () => scenario.request(scenario.data));
  const method = requests[0].method ?? 'GET';
  const expectStatus = scenario.expectStatus ?? 200;
  const headers = { authorization: `Bearer ${apiKey}` };
  const offset = size(database.jsonLog);
  await mark(marker, -1);
  for (const [i, r] of requests.entries()) {
    const res = await request(app.url + r.path, { method, headers: { ...headers, ...r.headers }, body: r.body });
    if (res.status !== expectStatus) throw new Error(`${method} ${r.path} answered ${res.status}: ${res.body.slice(0, 200)}`);
    await mark(marker, i);
  }
  const n = requests.length;
  // Request i's statements come between markers i - 1 and i (each is logged before its result is sent: before
  // the app answers, so before our next marker).
  let records = [];
  for (let i = 0; i < 100 && !records.some((r) => r.mark === n - 1); i++) {
    if (i > 0) await sleep(50);
    records = readRecords(database.jsonLog, offset);
  }
  const intervals = Array.from({ length: n }, () => []);
  const skipped = new Set();
  let current = null;
  for (const record of records) {
    if (record.mark !== undefined) current = record.mark + 1 < n ? record.mark + 1 : null;
    else if (current === null || !count.perRequest.has(record.queryId)) continue;
    // A string of several statements (simple protocol) is logged under its last statement's id alone, so it cannot
    // be told apart from that statement: left out, and said.
    else if (record.simple && statementsIn(record.text) > 1) skipped.add(record.text);
    else intervals[current].push(record);
  }

  // Each request's statements as a template: the values that came from its request (a path segment, a query
  // parameter, a field of its body), the ids and times it made up, and the values every request shares.
  const seen = new Map();
  for (const interval of intervals) {
    const tokens = new Set(interval.flatMap((s) => s.params.flatMap((p) => (p === null ? [] : (p.match(TOKEN) ?? [])))));
    for (const t of tokens) seen.set(t, (seen.get(t) ?? 0) + 1);
  }
  const shared = (token) => (seen.get(token) ?? 0) >= n / 2;
  const templates = intervals.map((interval, i) => template(interval, inputsOf(requests[i]), shared));
  const counts = new Map();
  for (const t of templates) {
    const key = JSON.stringify(t);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const [key, agreeing] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0];
  const statements = JSON.parse(key);
  if (statements.length === 0) throw new Error('no statement ran a whole number of times per request');
  if (agreeing < 0.6 * n) {
    const [a, b] = [...counts.keys()];
    throw new Error(`the requests' statements differ (the most common sequence in ${agreeing} of ${n}), e.g. ${firstDifference(JSON.parse(a), JSON.parse(b))}`);
  }
  for (const s of statements) {
    const stat = count.perRequest.get(s.queryId);
    s.normalized = stat.query;
    s.callsPerRequest = stat.callsPerRequest;
    s.rowsPerCall = stat.rowsPerCall;
  }
  // Per request by the count, but not in the logged requests' common sequence (or logged as many times as counted).
  const notInPlan = [...count.perRequest.values()]
    .filter((s) => statements.filter((t) => t.queryId === s.id).length !== Math.round(s.callsPerRequest))
    .map((s) => ({ queryId: s.id, callsPerRequest: s.callsPerRequest, inPlan: statements.filter((t) => t.queryId === s.id).length, text: s.query }));
  const transaction = statements.some((s) => TRANSACTION.test(s.text)) ? 'app' : method !== 'GET' && statements.length > 1 ? 'wrapped' : 'none';
  return {
    scenario: scenario.name,
    method,
    expectStatus,
    write: method !== 'GET',
    transaction,
    countedRequests: count.requests,
    agreeing,
    statements,
    notInPlan,
    besides: count.besides,
    skipped: [...skipped],
    requests,
  };
}

/** Statements in a simple-protocol string: `BEGIN; SELECT 1; COMMIT` is 3 (quotes are not parsed: a rough count). */
function statementsIn(text) {
  return text.split(';').filter((part) => part.trim().length > 0).length;
}

function firstDifference(a, b) {
  if (!b) return 'one sequence only';
  if (a.length !== b.length) return `${a.length} statements against ${b.length}`;
  for (const [i, s] of a.entries()) {
    const t = b[i];
    if (s.queryId !== t.queryId) return `statement ${i + 1}: ${short(s.text, 60)} against ${short(t.text, 60)}`;
    for (const [j, p] of s.params.entries()) {
      if (JSON.stringify(p) !== JSON.stringify(t.params[j]))
        return `statement ${i + 1} (${short(s.text, 60)}), $${j + 1}: ${short(JSON.stringify(p), 200)} against ${short(JSON.stringify(t.params[j]), 200)}`;
    }
  }
  return 'none found';
}

/** A request's values, as the baseline finds them in the same request: `path.3`, `query.cursor`, `body.text`. */
export function inputsOf({ path, body }) {
  const url = new globalThis.URL(path, 'http://bench');
  const inputs = [];
  url.pathname.split('/').forEach((segment, i) => segment && inputs.push([`path.${i}`, decodeURIComponent(segment)]));
  for (const [name, value] of url.searchParams) inputs.push([`query.${name}`, value]);
  if (body) {
    const walk = (value, at) => {
      if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, at ? `${at}.${k}` : k);
      else if (value !== null) inputs.push([`body.${at}`, String(value)]);
    };
    walk(JSON.parse(body), '');
  }
  return new Map(inputs.map(([ref, value]) => [value, ref]).reverse());
}

/**
 * One request's statements, each value as parts: text (also a value every request shares), `{ ref }` (from the
 * request), `{ uuid, version }` (an id it made up: the same part wherever the same id is), `{ now }` (a time:
 * milliseconds from when it was logged, to the second), `{ random, prefix, length, hex }` (another made-up token).
 */
function template(interval, inputs, shared) {
  const made = new Map();
  const part = (token, loggedAt) => {
    if (inputs.has(token)) return { ref: inputs.get(token) };
    if (shared(token)) return token;
    if (IS_TIMESTAMP.test(token)) return { now: Math.round((toDate(token) - loggedAt) / 1000) * 1000 };
    if (!made.has(token)) made.set(token, made.size);
    if (IS_UUID.test(token)) return { uuid: made.get(token), version: token[14] };
    const prefix = /^[A-Za-z]+_/.exec(token)?.[0] ?? '';
    const rest = token.slice(prefix.length);
    return { random: made.get(token), prefix, length: rest.length, hex: /^[0-9a-f]+$/.test(rest) };
  };
  return interval.map((s) => ({
    queryId: s.queryId,
    simple: s.simple,
    named: s.named,
    text: s.text,
    params: s.params.map((value) => {
      if (value === null) return null;
      if (inputs.has(value)) return [{ ref: inputs.get(value) }];
      const parts = [];
      let last = 0;
      for (const m of value.matchAll(TOKEN)) {
        if (m.index > last) parts.push(value.slice(last, m.index));
        parts.push(part(m[0], s.loggedAt));
        last = m.index + m[0].length;
      }
      if (last < value.length) parts.push(value.slice(last));
      // Adjacent text parts joined: a shared token is text like any other.
      return parts.reduce((acc, p) => (typeof p === 'string' && typeof acc.at(-1) === 'string' ? [...acc.slice(0, -1), acc.at(-1) + p] : [...acc, p]), []);
    }),
  }));
}

/** `2026-11-29 15:40:44.547+00` (PostgreSQL's output) or `2026-11-29 15:40:44.547 UTC` (its log's) as a time. */
function toDate(text) {
  const iso = text
    .replace(' UTC', 'Z')
    .replace(' ', 'T')
    .replace(/([+-]\d{2})$/, '$1:00');
  return new Date(iso).getTime();
}

function size(file) {
  return existsSync(file) ? statSync(file).size : 0;
}

/**
 * The statements logged from `offset` on (jsonlog records of `log_min_duration_statement`): `execute <name>: text`
 * (extended protocol, with `parameters: $1 = '...'`) and `statement: text` (simple protocol, e.g. BEGIN), and our
 * markers. The query id is read from the raw line: it is a 64-bit integer, which JSON.parse would round.
 */
function readRecords(file, offset) {
  const length = size(file) - offset;
  if (length <= 0) return [];
  const buffer = Buffer.alloc(length);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buffer, 0, length, offset);
  } finally {
    closeSync(fd);
  }
  const records = [];
  for (const line of buffer.toString('utf8').split('\n')) {
    if (!line.includes('"message":"duration: ')) continue;
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // a line being written
    }
    const m = /^duration: [\d.]+ ms {2}(?:execute ([^:]*)|statement): ([\s\S]*)$/.exec(entry.message);
    if (!m) continue;
    const [, name, text] = m;
    const params = parseParameters(entry.detail ?? '');
    if (text.includes(MARK)) {
      records.push({ mark: Number(params[0]) });
      continue;
    }
    records.push({
      queryId: /"query_id":(-?\d+)/.exec(line)?.[1],
      simple: name === undefined,
      named: name !== undefined && name !== '<unnamed>',
      text,
      params,
      loggedAt: toDate(entry.timestamp),
    });
  }
  return records;
}

/** `parameters: $1 = 'it''s', $2 = NULL` → ["it's", null], as PostgreSQL printed them (its text form of each value). */
function parseParameters(detail) {
  if (!detail.startsWith('parameters: ')) return [];
  const values = [];
  for (const m of detail.matchAll(/\$(\d+) = (?:NULL|'((?:[^']|'')*)')/g)) values[Number(m[1]) - 1] = m[2] === undefined ? null : m[2].replaceAll("''", "'");
  return values;
}

/**
 * Runs `plan.requests` against the baseline's same-work route and compares what pg_stat_statements counts with the
 * app's: every statement as many times a request, returning (or changing) as many rows a call, within 10%. Resolves
 * to null when alike, else what differs: a plan that does not do the app's work is no baseline.
 */
export async function verifyPlan({ pool, baseline, index, plan }) {
  // pg_stat_statements counts whatever runs: the app's background jobs too (each statement is compared alone).
  await pool.query('SELECT pg_stat_statements_reset()');
  for (const r of plan.requests) {
    const res = await request(`${baseline.url}/same-work/${index}${r.path}`, { method: plan.method, headers: r.headers ?? {}, body: r.body });
    if (res.status !== plan.expectStatus) return `the baseline answered ${res.status}: ${res.body.slice(0, 200)}`;
  }
  const { rows } = await pool.query(`SELECT queryid::text AS id, calls::float8 AS calls, rows::float8 AS rows FROM pg_stat_statements`);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const n = plan.requests.length;
  const near = (a, b) => Math.abs(a - b) <= 0.1 * Math.max(a, b) + 1e-9;
  const differences = [];
  for (const s of plan.statements) {
    const got = byId.get(s.queryId);
    if (!got) differences.push(`${short(s.normalized)}: not run`);
    else if (!near(got.calls / n, s.callsPerRequest))
      differences.push(`${short(s.normalized)}: ${got.calls / n} calls a request, the app ${s.callsPerRequest}`);
    else if (!near(got.rows / got.calls, s.rowsPerCall))
      differences.push(`${short(s.normalized)}: ${got.rows / got.calls} rows a call, the app ${s.rowsPerCall}`);
  }
  return differences.length ? differences.join('; ') : null;
}

export function short(text, length = 90) {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}

/** What baseline-server.mjs needs of a plan (not the requests). */
export function servedPlan(plan) {
  if (plan.error) return null;
  return {
    scenario: plan.scenario,
    method: plan.method,
    expectStatus: plan.expectStatus,
    transaction: plan.transaction,
    statements: plan.statements.map(({ simple, named, text, params }) => ({ simple, named, text, params })),
  };
}

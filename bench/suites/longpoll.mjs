// 1,000 agents waiting in long polls (`POST /api/v0/agent/claims` with `waitMs`), and what the server still serves
// meanwhile: `/healthz` and an authenticated GET of a session, with and without the polls, on PostgreSQL and PGlite.
import autocannon from 'autocannon';
import { Buffer } from 'node:buffer';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import { startNodeServer } from '../lib/processes.mjs';

export const name = 'longpoll';
/** Reads none of the loaded sessions or facts: with only this selected, the bench skips loading. */
export const needsData = false;

const MEASUREMENT = 'longpoll';
const ORGANIZATIONS = 5;
const COMPUTERS_PER_ORGANIZATION = 20;
// With the default caps (10 per computer, 200 per organization) 5 x 20 x 10 = 1,000 polls fit exactly.
const POLLS_PER_COMPUTER = 10;
const WAIT_MS = 30_000; // the longest waitMs the API takes
const P99_TARGET_MS = 200;
// A surge: this many polls at once from one computer, of which the default LONG_POLLS_PER_COMPUTER (10) wait.
const SURGE_POLLS = 1_000;
const LONG_POLLS_PER_COMPUTER = 10;

export function selected(only) {
  return !only || only.some((part) => MEASUREMENT.includes(part) || part.includes('long poll'));
}

/**
 * Per engine: start a server of its own (PostgreSQL: the bench's database; PGlite: a fresh DATA_DIR), create
 * organizations, owners and keys with the app's own services, computers over HTTP, then measure `/healthz` and
 * `GET /api/v0/sessions/:id` with autocannon: with no poll waiting; during surges of 1,000 polls at once from one
 * computer (10 wait, the rest are refused, and the next surge comes as soon as the refusals are in); then with 1,000
 * waiting (each re-polls as soon as its poll answers, as an agent does). Pass: every measured request 200, every
 * fleet poll admitted (no 429), every surge poll past the cap refused 429 (none failing), and p99 under 200 ms
 * during the surges and with the polls waiting.
 */
export async function run({ env, root, databaseUrl, results, log }) {
  const settings = {
    duration: Number(env.BENCH_DURATION ?? 10),
    warmup: Number(env.BENCH_WARMUP ?? 3),
    connections: Number(env.BENCH_CONNECTIONS ?? 50),
    polls: ORGANIZATIONS * COMPUTERS_PER_ORGANIZATION * POLLS_PER_COMPUTER,
  };
  const engines = [];
  for (const engine of ['postgres', 'pglite']) {
    const dataDir = mkdtempSync(join(tmpdir(), `bench-longpoll-${engine}-`));
    const serverEnv = {
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOCAL_AGENTS: 'off',
      // The bench measures capacity, not the per-client request limits.
      RATE_LIMIT_CREDENTIAL_PER_MINUTE: '0',
      RATE_LIMIT_ORGANIZATION_PER_MINUTE: '0',
      RATE_LIMIT_ANONYMOUS_PER_MINUTE: '0',
      ...(engine === 'postgres' ? { DATABASE_URL: databaseUrl, DATABASE_POOL_SIZE: '10', SECRETS_KEY: randomBytes(32).toString('base64') } : {}),
    };
    try {
      log(`longpoll (${engine}): seeding ${ORGANIZATIONS} organizations`);
      const owners = await seedOwners(root, serverEnv);
      const server = await startNodeServer({
        name: `app-${engine}`,
        script: join(root, 'dist/main.js'),
        env: serverEnv,
        logFile: join(results, `app-longpoll-${engine}.log`),
        healthPath: '/healthz',
      });
      try {
        engines.push({ engine, ...(await measureEngine(server.url, owners, settings, (line) => log(`longpoll (${engine}): ${line}`))) });
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const pass = engines.every((e) => e.pass);
  return { pass, settings, engines, markdown: markdown(engines, settings) };
}

/** Organizations with an owner and an API key each, made with the app's own services (as `npm run cli` does). */
async function seedOwners(root, serverEnv) {
  const require = createRequire(join(root, 'package.json'));
  require('reflect-metadata');
  const { NestFactory } = require('@nestjs/core');
  const { loadConfig } = require(join(root, 'dist/config/app-config.js'));
  const { CliModule } = require(join(root, 'dist/cli/cli.module.js'));
  const { OrganizationsService, ApiKeysService, Role } = require(join(root, 'dist/modules/auth/index.js'));
  const app = await NestFactory.createApplicationContext(CliModule.register(loadConfig(serverEnv)), { logger: false });
  try {
    const owners = [];
    const run = randomBytes(3).toString('hex');
    // One more organization than the fleet's: the surges' computer, whose waiting polls take none of the fleet's slots.
    for (let i = 0; i <= ORGANIZATIONS; i++) {
      const org = await app.get(OrganizationsService).createOrganization({ slug: `longpoll-${run}-${i}`, name: `Long polls ${i}` });
      const user = await app.get(OrganizationsService).createUser(org.slug, { email: `owner@longpoll-${run}-${i}.example`, name: 'Owner', role: Role.Owner });
      const { key } = await app.get(ApiKeysService).create({ organizationId: org.id, userId: user.id, name: 'bench' });
      owners.push({ organizationId: org.id, key });
    }
    return owners;
  } finally {
    await app.close();
  }
}

async function measureEngine(url, owners, settings, log) {
  const json = async (path, key, body) => {
    const res = await globalThis.fetch(url + path, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body && JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${path} answered ${res.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text);
  };
  const tokens = [];
  for (const owner of owners.slice(0, ORGANIZATIONS)) {
    for (let c = 0; c < COMPUTERS_PER_ORGANIZATION; c++) {
      const computer = await json('/api/v0/computers', owner.key, { name: `agent-host-${c}`, provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
      tokens.push(computer.agentToken);
    }
  }
  const reader = owners[0];
  const session = await json('/api/v0/sessions', reader.key, {});
  const targets = [
    { name: '/healthz', path: '/healthz', headers: {} },
    { name: 'GET session (authenticated)', path: `/api/v0/sessions/${session.sessionId}`, headers: { authorization: `Bearer ${reader.key}` } },
  ];

  const rows = [];
  for (const target of targets) rows.push({ polls: 0, ...(await measure(url, target, settings, log)) });

  const surgeOwner = owners[ORGANIZATIONS];
  const surgeComputer = await json('/api/v0/computers', surgeOwner.key, { name: 'surging', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
  const surges = startSurges(url, surgeComputer.agentToken);
  try {
    await surges.first;
    for (const target of targets) rows.push({ polls: 0, surge: true, ...(await measure(url, target, settings, log)) });
  } finally {
    surges.stop();
  }
  const surge = { surges: surges.count(), refused: surges.refused(), failed: surges.failed() };
  log(`surges of ${SURGE_POLLS}: ${surge.surges}, ${surge.refused} polls refused (429), ${surge.failed} failed`);

  const fleet = startPolls(url, tokens);
  try {
    const deadline = Date.now() + 30_000;
    while (fleet.waiting() < settings.polls && Date.now() < deadline && fleet.refused() === 0) await sleep(100);
    await sleep(1000); // every poll past its first look and waiting
    log(`${fleet.waiting()} polls waiting (${fleet.refused()} refused, ${fleet.failed()} failed)`);
    for (const target of targets) rows.push({ polls: fleet.waiting(), ...(await measure(url, target, settings, log)) });
  } finally {
    fleet.stop();
  }
  const loaded = rows.filter((r) => r.polls > 0);
  const surged = rows.filter((r) => r.surge);
  const polls = { admitted: fleet.admitted(), refused: fleet.refused(), failed: fleet.failed(), answeredWithWork: fleet.withWork() };
  const pass =
    rows.every((r) => r.ok) &&
    loaded.every((r) => r.polls >= settings.polls && r.latency.p99 < P99_TARGET_MS) &&
    surged.every((r) => r.latency.p99 < P99_TARGET_MS) &&
    polls.refused === 0 &&
    polls.failed === 0 &&
    surge.refused > 0 &&
    surge.failed === 0;
  return { rows, polls, surge, pass };
}

/** Each agent keeps one poll waiting: when one answers (after waitMs, with no work), it asks again at once. */
function startPolls(url, tokens) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  let stopped = false;
  let waiting = 0;
  let admitted = 0;
  let refused = 0;
  let failed = 0;
  let withWork = 0;
  const poll = (token, waitMs = WAIT_MS) => {
    if (stopped) return;
    const body = JSON.stringify({ waitMs });
    waiting++;
    const req = claim(url, agent, token, body, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => {
        waiting--;
        if (res.statusCode === 200) {
          admitted++;
          if (JSON.parse(text).work) withWork++;
          poll(token);
        } else {
          if (res.statusCode === 429) refused++;
          else failed++;
          setTimeout(() => poll(token), 1000);
        }
      });
    });
    req.on('error', () => {
      waiting--;
      if (!stopped) failed++;
    });
    req.end(body);
  };
  // The first polls end at random times, so the fleet re-polls steadily (about 1,000 per 30 s) as agents that did
  // not all start together do, rather than all at once every 30 s.
  for (const token of tokens) for (let i = 0; i < POLLS_PER_COMPUTER; i++) poll(token, 1000 + Math.floor(Math.random() * (WAIT_MS - 1000)));
  return {
    waiting: () => waiting,
    admitted: () => admitted,
    refused: () => refused,
    failed: () => failed,
    withWork: () => withWork,
    stop: () => {
      stopped = true;
      agent.destroy();
    },
  };
}

/** A claim (`POST /api/v0/agent/claims`) with the computer's token; `onResponse` gets the response. Call `end(body)` on it. */
function claim(url, agent, token, body, onResponse) {
  const { hostname, port } = new globalThis.URL(url);
  return http.request(
    {
      hostname,
      port,
      method: 'POST',
      path: '/api/v0/agent/claims',
      agent,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    },
    onResponse,
  );
}

/**
 * SURGE_POLLS polls at once from one computer's token, again as soon as all but the admitted ones (at most
 * LONG_POLLS_PER_COMPUTER, which wait) have answered. `first` resolves when the first surge's refusals are in.
 */
function startSurges(url, token) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const body = JSON.stringify({ waitMs: WAIT_MS });
  let stopped = false;
  let surges = 0;
  let refused = 0;
  let failed = 0;
  let firstDone;
  const first = new Promise((resolve) => (firstDone = resolve));
  const surge = () => {
    if (stopped) return;
    surges++;
    let left = SURGE_POLLS;
    let next = false;
    const answered = (status) => {
      if (status === 429) refused++;
      else if (status !== 200 && !stopped) failed++;
      left--;
      if (!next && left <= LONG_POLLS_PER_COMPUTER) {
        next = true;
        firstDone();
        globalThis.setImmediate(surge);
      }
    };
    for (let i = 0; i < SURGE_POLLS; i++) {
      const req = claim(url, agent, token, body, (res) => {
        res.resume();
        res.on('end', () => answered(res.statusCode));
      });
      req.on('error', () => answered(0));
      req.end(body);
    }
  };
  surge();
  return {
    first,
    count: () => surges,
    refused: () => refused,
    failed: () => failed,
    stop: () => {
      stopped = true;
      agent.destroy();
    },
  };
}

async function measure(url, target, { duration, warmup, connections }, log) {
  const options = { url: url + target.path, connections, headers: target.headers };
  if (warmup > 0) await autocannon({ ...options, duration: warmup });
  const r = await autocannon({ ...options, duration });
  const statusCodes = Object.fromEntries(Object.entries(r.statusCodeStats).map(([code, { count }]) => [code, count]));
  const ok = r.requests.total > 0 && Object.keys(statusCodes).every((code) => code === '200') && !r.errors;
  const row = {
    name: target.name,
    requestsPerSec: r.requests.average,
    latency: { p50: r.latency.p50, p99: r.latency.p99, max: r.latency.max },
    statusCodes,
    errors: r.errors,
    ok,
  };
  log(
    `${target.name}: ${Math.round(row.requestsPerSec)} req/s, p50 ${row.latency.p50} ms, p99 ${row.latency.p99} ms${ok ? '' : `, FAILED: ${JSON.stringify(statusCodes)} ${r.errors} errors`}`,
  );
  return row;
}

function markdown(engines, settings) {
  const lines = [
    `## Long polls (${settings.polls.toLocaleString('en')} waiting; ${settings.connections} connections, ${settings.duration} s each after ${settings.warmup} s warm-up; target p99 < ${P99_TARGET_MS} ms with the polls waiting)`,
    '',
    '| Engine | Request | Polls waiting | req/s | p50 ms | p99 ms | max ms | |',
    '|---|---|---:|---:|---:|---:|---:|---|',
  ];
  for (const e of engines) {
    for (const r of e.rows) {
      const verdict = !r.ok ? `FAILED ${JSON.stringify(r.statusCodes)}` : r.polls === 0 && !r.surge ? '—' : r.latency.p99 < P99_TARGET_MS ? 'pass' : 'fail';
      lines.push(
        `| ${e.engine} | ${r.name} | ${r.surge ? `surges of ${SURGE_POLLS.toLocaleString('en')}` : r.polls} | ${Math.round(r.requestsPerSec)} | ${r.latency.p50} | ${r.latency.p99} | ${r.latency.max} | ${verdict} |`,
      );
    }
  }
  lines.push(
    '',
    engines
      .map(
        (e) =>
          `${e.engine} polls: ${e.polls.admitted} answered 200 (${e.polls.answeredWithWork} with work), ${e.polls.refused} refused (429), ${e.polls.failed} failed; ` +
          `${e.surge.surges} surges of ${SURGE_POLLS.toLocaleString('en')}, ${e.surge.refused} refused (429), ${e.surge.failed} failed`,
      )
      .join('; '),
  );
  return lines.join('\n');
}

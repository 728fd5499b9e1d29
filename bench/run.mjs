// `npm run bench`: load a large database, start the real server and a bare baseline, and measure every scenario.
import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import console from 'node:console';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, release, tmpdir, totalmem, type } from 'node:os';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { captureScenarios, prepareCapture, servedPlan, short, verifyPlan } from './lib/capture.mjs';
import { createApiKey, ensureFixtures } from './lib/fixtures.mjs';
import { seconds } from './lib/bulk.mjs';
import { closeConnections, request } from './lib/http.mjs';
import { runLoaders } from './lib/load.mjs';
import { Database, LOAD_SETTINGS, REPORTED_SETTINGS, RUN_SETTINGS } from './lib/postgres.mjs';
import { cpuMillis, startNodeServer } from './lib/processes.mjs';
import { formatBytes, judge, markdownTable } from './lib/report.mjs';
import { SETTLE_MS, walNow, walSince } from './lib/wal.mjs';

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(BENCH);
const RESULTS = join(BENCH, 'results');
const BUDGETS = join(BENCH, 'budgets.json');
// Issue 41: against its own same-work baseline, each scenario on PostgreSQL serves at least 0.7 of its requests a
// second and spends at most 1.6 times its CPU per request. A scenario's `target` may override either.
const SAME_WORK_TARGET = { minSameWorkRatio: 0.7, maxSameWorkCpuFactor: 1.6 };

const env = process.env;
const number = (name, fallback) => {
  const value = Number(env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name}: expected a number, got ${env[name]}`);
  return value;
};
const config = {
  duration: number('BENCH_DURATION', 10),
  warmup: number('BENCH_WARMUP', 3),
  connections: number('BENCH_CONNECTIONS', 50),
  // Comma-separated parts of scenario names to run (baselines always run).
  only: env.BENCH_SCENARIOS ? env.BENCH_SCENARIOS.toLowerCase().split(',') : null,
  // CI's smoke run: it fails when something failed outright (an error, a wrong status, wrong rows) or a scenario's CPU
  // per request is over its smoke budget (bench/budgets.json), never on speed, which a shared CI runner cannot promise.
  smoke: env.BENCH_SMOKE === '1',
  pgliteSessions: env.BENCH_PGLITE === '0' ? null : number('BENCH_PGLITE_SESSIONS', 20000),
};
const startedAt = Date.now();
const log = (line) => console.log(`[bench ${seconds(startedAt).padStart(6)} s] ${line}`);

const db = new Database({ url: env.BENCH_DATABASE_URL, dir: env.BENCH_DATA_DIR, keep: env.BENCH_KEEP === '1', log });
const servers = [];
let cleaning;
let interrupted = false;
const cleanup = () =>
  (cleaning ??= (async () => {
    for (const server of servers) await server.stop().catch(() => undefined);
    await db.dispose();
  })());
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
]) {
  process.on(signal, () => {
    interrupted = true;
    log(`${signal}: stopping the servers and PostgreSQL`);
    void cleanup().finally(() => process.exit(code));
  });
}

try {
  process.exitCode = (await main()) ? 0 : 1;
} catch (error) {
  if (!interrupted) console.error(error);
  process.exitCode = 1;
} finally {
  await cleanup();
}

/** Resolves to whether every scenario passed. */
async function main() {
  if (env.BENCH_SKIP_BUILD !== '1') {
    log('npm run build');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  }
  mkdirSync(RESULTS, { recursive: true });

  // Load with the fast settings, then restart with the durable ones for the measured run.
  await db.start(LOAD_SETTINGS);
  log(db.owned ? `PostgreSQL cluster in ${db.dir}${db.reused ? ' (reused)' : ''}` : 'using BENCH_DATABASE_URL');
  const loadStarted = Date.now();
  await migrate(db.url);
  // Loading is skipped when nothing selected reads the loaded data (e.g. BENCH_SCENARIOS=longpoll).
  const suites = await loadSuites();
  const scenariosWanted = await anyScenarioSelected();
  const needsData = scenariosWanted || suites.some((suite) => suite.needsData !== false);
  if (!needsData) log('nothing selected reads the loaded sessions or facts: loading skipped');
  const load = await withClient(db.url, async (client) => {
    const fixtures = await ensureFixtures(client);
    const loaders = needsData ? await runLoaders({ dir: join(BENCH, 'load'), db: client, fixtures, env, log }) : [];
    let vacuumSeconds = null;
    if (loaders.some((l) => !l.reused)) {
      const started = Date.now();
      await client.query('VACUUM ANALYZE');
      vacuumSeconds = Number(seconds(started));
      log(`VACUUM ANALYZE in ${vacuumSeconds} s`);
    }
    return { loaders, vacuumSeconds };
  });
  load.seconds = Number(seconds(loadStarted));
  if (db.owned) {
    await db.start(RUN_SETTINGS);
    // The load wrote with fsync off: flush it now rather than during the measurements.
    execFileSync('sync');
  }

  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  pool.on('error', () => undefined); // an idle connection dropped at shutdown is no failure
  try {
    const fixtures = await ensureFixtures(pool);
    const apiKey = await createApiKey(pool, fixtures);
    const facts = await databaseFacts(pool);
    log(
      `database: ${facts.version}, ${formatBytes(facts.sizeBytes)}; ${Object.entries(facts.settings)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );

    // Rate limits stay on, so their cost is measured, but high enough that one bench client never meets them.
    const unreachable = '1000000000';
    const serverEnv = {
      DATABASE_URL: db.url,
      DATABASE_POOL_SIZE: '10',
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      SECRETS_KEY: randomBytes(32).toString('base64'),
      RATE_LIMIT_CREDENTIAL_PER_MINUTE: unreachable,
      RATE_LIMIT_ORGANIZATION_PER_MINUTE: unreachable,
      RATE_LIMIT_ANONYMOUS_PER_MINUTE: unreachable,
    };
    const captureUnavailable = await prepareCapture(pool, db);
    const app = await startNodeServer({
      name: 'app',
      script: join(ROOT, 'dist/main.js'),
      env: serverEnv,
      logFile: join(RESULTS, 'app.log'),
      healthPath: '/healthz',
    });
    servers.push(app);
    const startupRollupSeconds = await waitForStartupRollup(app, apiKey);

    const scenarios = scenariosWanted ? await loadScenarios({ db: pool, fixtures, root: ROOT, log }) : [];
    const [reference, ...rest] = scenarios;
    // The same-work baselines: the statements the app runs for a request of each scenario, captured now (before
    // anything is measured: statements are logged meanwhile), served by the baseline, and checked to do the same.
    const onApp = rest.filter((s) => s.server !== 'baseline');
    const plans = captureUnavailable
      ? onApp.map((s) => ({ scenario: s.name, error: captureUnavailable }))
      : await captureScenarios({ pool, database: db, app, apiKey, scenarios: onApp, connections: config.connections, log });
    const plansFile = join(RESULTS, 'same-work.json');
    writeFileSync(plansFile, JSON.stringify(plans.map(servedPlan), null, 2) + '\n');
    const baseline = await startNodeServer({
      name: 'baseline',
      script: join(BENCH, 'baseline-server.mjs'),
      env: { ...serverEnv, BENCH_SAME_WORK: plansFile },
      logFile: join(RESULTS, 'baseline.log'),
      healthPath: '/healthz',
    });
    servers.push(baseline);
    for (const [index, plan] of plans.entries()) {
      if (plan.error) continue;
      const differs = await verifyPlan({ pool, baseline, index, plan });
      if (differs) {
        plan.error = `the baseline's statements are not the app's: ${differs}`;
        log(`same work: ${plan.scenario}: ${plan.error}`);
      }
    }

    // The capture's writes reach pg_stat_wal up to 10 s after (lib/wal.mjs): not during a measured write.
    if (plans.some((p) => p.write)) await sleep(SETTLE_MS);

    const budgets = existsSync(BUDGETS) ? JSON.parse(readFileSync(BUDGETS, 'utf8')) : null;
    const busy = await cpuBusy();
    if (busy > 0.15) log(`warning: before measuring, other processes kept the CPUs ${Math.round(busy * 100)}% busy; the numbers will be low`);
    const results = [];
    // Each scenario is measured right after a run of the baseline (and of its same-work baseline) and compared with
    // those runs: on a shared machine the baseline alone drifted by 20% within one bench, so a single baseline run misjudges.
    for (const scenario of rest) {
      if (scenario.server === 'baseline') {
        results.push(...(await measurePaired(reference, baseline, scenario, baseline, apiKey)));
        continue;
      }
      const index = plans.findIndex((p) => p.scenario === scenario.name);
      const sameWork = { index, plan: plans[index] };
      const target = { ...SAME_WORK_TARGET, ...scenario.target };
      results.push(...(await measurePaired(reference, baseline, { ...scenario, target }, app, apiKey, { sameWork, wal: pool })));
    }
    // The embedded default: the same scenarios against the app on PGlite, each paired with a run of the baseline
    // (on PostgreSQL: there is no bare-pg equivalent of PGlite in-process) and reported beside, without targets.
    if (onApp.length > 0 && env.BENCH_PGLITE !== '0') {
      results.push(...(await measureOnPglite(rest, reference, baseline, serverEnv)));
    }
    judge(results, { budgets, smoke: config.smoke });

    // Suites measure on their own terms (e.g. one request at a time) after the scenarios.
    const suiteResults = {};
    for (const suite of suites) {
      const result = await suite.run({ db: pool, app, env, only: config.only, root: ROOT, databaseUrl: db.url, results: RESULTS, log });
      if (result) suiteResults[suite.name] = result;
    }

    const report = {
      finishedAt: new Date().toISOString(),
      commit: commitOf(),
      machine: {
        cores: cpus().length,
        cpu: cpus()[0]?.model,
        memory: formatBytes(totalmem()),
        os: `${type()} ${release()}`,
        node: process.version,
        busyBefore: busy,
      },
      database: { ...facts, size: formatBytes(facts.sizeBytes), load, storage: await storageFacts(pool) },
      run: config,
      app: { startupRollupSeconds },
      scenarios: results,
      sameWork: plans.map(({ requests, ...plan }) => ({
        ...plan,
        requests: requests?.length,
        statements: plan.statements?.map(({ queryId, normalized, text, named, simple, callsPerRequest, rowsPerCall }) => ({
          queryId,
          callsPerRequest,
          rowsPerCall,
          protocol: simple ? 'simple' : named ? 'prepared' : 'unnamed',
          normalized,
          text,
        })),
      })),
      budgets: budgets ? { file: 'bench/budgets.json', factor: budgets.factor, kind: config.smoke ? 'smoke' : 'cpuMicrosPerRequest' } : null,
      ...Object.fromEntries(Object.entries(suiteResults).map(([name, { markdown: _, ...rest }]) => [name, rest])),
    };
    writeFileSync(join(RESULTS, 'latest.json'), JSON.stringify(report, null, 2) + '\n');
    print(report, Object.values(suiteResults));
    if (config.smoke) {
      // Speed targets are not the smoke's, but CPU per request over its budget is: a change that makes a request
      // cost much more fails CI.
      const failed = [...results, ...Object.values(suiteResults)].flatMap(verdicts).some((verdict) => verdict.startsWith('FAILED'));
      return !failed && !results.some((r) => r.budget?.pass === false);
    }
    return results.every((r) => ['pass', '—'].includes(r.verdict)) && Object.values(suiteResults).every((r) => r.pass);
  } finally {
    closeConnections();
    await pool.end();
  }
}

/**
 * The app rolls up analytics at start-up, in the background. The owner's trigger waits for a run in progress,
 * so calling it waits for that one: no scenario is measured while it runs. Resolves to how long it took.
 */
async function waitForStartupRollup(app, apiKey) {
  const res = await request(`${app.url}/api/v1/analytics/rollup`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` } });
  if (res.status !== 200) throw new Error(`POST /api/v1/analytics/rollup answered ${res.status}: ${res.body.slice(0, 300)}`);
  const took = Number((res.ms / 1000).toFixed(1));
  log(`the app's start-up analytics rollup done ${took} s after the app answered /healthz`);
  return took;
}

/** Share of CPU time used over one second while the bench itself is idle: anything else running skews the results. */
async function cpuBusy() {
  const total = () =>
    cpus().reduce((acc, { times }) => ({ idle: acc.idle + times.idle, all: acc.all + Object.values(times).reduce((a, b) => a + b, 0) }), { idle: 0, all: 0 });
  const before = total();
  await sleep(1000);
  const after = total();
  return 1 - (after.idle - before.idle) / (after.all - before.all);
}

/**
 * Loads BENCH_PGLITE_SESSIONS sessions (default 20,000: PGlite loads far slower than PostgreSQL) into a new PGlite
 * data directory through the app's own embedded server, with the same loaders; then starts the app on that directory,
 * as `npm start` runs it, and measures the scenarios against it. Resolves to their results, named "... (PGlite)".
 */
async function measureOnPglite(scenarios, reference, baseline, serverEnv) {
  const require = createRequire(import.meta.url);
  const { EmbeddedPostgres } = require(join(ROOT, 'dist/platform/database/embedded-postgres.js'));
  const dir = mkdtempSync(join(tmpdir(), 'bench-pglite-'));
  try {
    const sessions = env.BENCH_PGLITE_SESSIONS ?? '20000';
    log(`PGlite: loading ${Number(sessions).toLocaleString('en')} sessions into ${dir}`);
    const embedded = await EmbeddedPostgres.start(dir);
    let apiKey;
    let wanted;
    try {
      const { host, port, username: user, database } = embedded.connectionOptions;
      await migrate({ host, port, username: user, database });
      const client = new pg.Client({ host, port, user, database });
      await client.connect();
      try {
        const fixtures = await ensureFixtures(client);
        const loadEnv = { ...env, BENCH_SESSIONS: sessions, BENCH_ANALYTICS_FACTS: '0' };
        await runLoaders({ dir: join(BENCH, 'load'), db: client, fixtures, env: loadEnv, log: (line) => log(`PGlite: ${line}`) });
        await client.query('VACUUM ANALYZE');
        apiKey = await createApiKey(client, fixtures);
        const names = new Set(scenarios.map((s) => s.name));
        wanted = (await loadScenarios({ db: client, fixtures, root: ROOT, log: (line) => log(`PGlite: ${line}`) })).filter(
          (s) => names.has(s.name) && s.server !== 'baseline',
        );
      } finally {
        await client.end();
      }
    } finally {
      await embedded.stop();
    }
    const pgliteEnv = { ...serverEnv, DATA_DIR: dir };
    delete pgliteEnv.DATABASE_URL;
    delete pgliteEnv.DATABASE_POOL_SIZE;
    const app = await startNodeServer({
      name: 'app-pglite',
      script: join(ROOT, 'dist/main.js'),
      env: pgliteEnv,
      logFile: join(RESULTS, 'app-pglite.log'),
      healthPath: '/healthz',
    });
    servers.push(app);
    const results = [];
    try {
      for (const scenario of wanted) {
        results.push(...(await measurePaired(reference, baseline, { ...scenario, name: `${scenario.name} (PGlite)`, target: null }, app, apiKey)));
      }
    } finally {
      await app.stop();
    }
    return results;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The app's own migrations, run as the app runs them. */
async function migrate(connection) {
  const require = createRequire(import.meta.url);
  const { DataSource } = require('typeorm');
  const { dataSourceOptions } = require(join(ROOT, 'dist/platform/database/open-database.js'));
  const dataSource = new DataSource(dataSourceOptions(typeof connection === 'string' ? { url: connection } : connection, 2));
  await dataSource.initialize();
  try {
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    if (applied.length) log(`migrations: ${applied.map((m) => m.name).join(', ')}`);
  } finally {
    await dataSource.destroy();
  }
}

async function withClient(url, fn) {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined); // the query in progress fails too, and says why
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function databaseFacts(pool) {
  const { rows } = await pool.query(
    `SELECT current_setting('server_version') AS version, pg_database_size(current_database())::float8 AS size,
            (SELECT json_object_agg(name, current_setting(name)) FROM unnest($1::text[]) name) AS settings,
            (SELECT json_object_agg(relname, pg_total_relation_size(oid)::float8 ORDER BY pg_total_relation_size(oid) DESC)
             FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace) AS tables`,
    [REPORTED_SETTINGS],
  );
  const [{ version, size, settings, tables }] = rows;
  return { version: `PostgreSQL ${version}`, sizeBytes: size, settings, tableBytes: tables };
}

/**
 * Every file in bench/scenarios/ exports `scenarios` (and optionally `setup(ctx)`, whose result each scenario's
 * `request(data)` receives). Baselines run first, since the other scenarios are compared with them.
 */
async function loadScenarios(ctx) {
  const dir = join(BENCH, 'scenarios');
  const all = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.mjs'))
    .sort()) {
    const module = await import(pathToFileURL(join(dir, file)).href);
    const wanted = module.scenarios.filter((s) => s.baseline || !config.only || config.only.some((part) => s.name.toLowerCase().includes(part)));
    if (wanted.length === 0) continue;
    const data = (await module.setup?.(ctx)) ?? {};
    all.push(...wanted.map((s) => ({ ...s, data })));
  }
  return [...all.filter((s) => s.baseline), ...all.filter((s) => !s.baseline)];
}

/** Whether BENCH_SCENARIOS asks for any scenario besides the baselines (which run only to compare the others with). */
async function anyScenarioSelected() {
  const dir = join(BENCH, 'scenarios');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.mjs'))) {
    const module = await import(pathToFileURL(join(dir, file)).href);
    if (module.scenarios.some((s) => !s.baseline && (!config.only || config.only.some((part) => s.name.toLowerCase().includes(part))))) return true;
  }
  return false;
}

/**
 * Every file in bench/suites/ exports `name`, `selected(only)` (whether BENCH_SCENARIOS asks for any of it) and
 * `run({ db, app, env, only, log })`, resolving to its results with `pass` and `markdown` (or null: nothing to run).
 */
async function loadSuites() {
  const dir = join(BENCH, 'suites');
  const suites = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.mjs'))
    .sort()) {
    const suite = await import(pathToFileURL(join(dir, file)).href);
    if (suite.selected(config.only)) suites.push(suite);
  }
  return suites;
}

/**
 * A run of the baseline (`reference` on `baseline`), then, given a captured plan, one of the scenario's same-work
 * baseline (on `baseline` too), then `scenario` on `server`, compared with both. `wal`: a pool to read the WAL
 * with, for a scenario that writes.
 */
async function measurePaired(reference, baseline, scenario, server, apiKey, { sameWork, wal } = {}) {
  const paired = await measure({ ...reference, name: `${reference.name} (before ${scenario.name})` }, baseline, apiKey);
  const runs = [paired];
  let same = null;
  if (sameWork?.plan && !sameWork.plan.error) {
    const prefix = `/same-work/${sameWork.index}`;
    same = await measure(
      {
        ...scenario,
        name: `same work as ${scenario.name}: Fastify + pg, ${sameWork.plan.statements.length} statement(s)`,
        baseline: true,
        sameWorkOf: scenario.name,
        target: null,
        request: (data) => {
          const r = scenario.request(data);
          return { ...r, path: prefix + r.path };
        },
      },
      baseline,
      apiKey,
      { wal },
    );
    runs.push(same);
  }
  const result = await measure(scenario, server, apiKey, { wal });
  result.pairedBaseline = paired.ok ? paired.requestsPerSec : null;
  result.pairedBaselineCpu = paired.ok ? paired.cpuMicrosPerRequest : null;
  if (sameWork) {
    // Against its own baseline, each ratio as against the primary-key read's: the baseline's CPU over ours.
    result.sameWork = same?.ok
      ? {
          requestsPerSec: same.requestsPerSec,
          cpuMicrosPerRequest: same.cpuMicrosPerRequest,
          ratio: result.ok ? result.requestsPerSec / same.requestsPerSec : null,
          cpuRatio: result.ok && result.cpuMicrosPerRequest && same.cpuMicrosPerRequest ? same.cpuMicrosPerRequest / result.cpuMicrosPerRequest : null,
          ...(same.walBytesPerRequest !== undefined ? { walBytesPerRequest: same.walBytesPerRequest } : {}),
          statements: sameWork.plan.statements.length,
        }
      : null;
    if (!result.sameWork) result.sameWorkMissing = sameWork.plan?.error ?? same?.failure ?? 'no plan captured';
  }
  return [...runs, result];
}

/** A short warm-up, then `duration` seconds of `connections` concurrent clients; the WAL too, given `wal`, for a write. */
async function measure(scenario, server, apiKey, { wal } = {}) {
  const url = server.url;
  const expectStatus = scenario.expectStatus ?? 200;
  const headers = { authorization: `Bearer ${apiKey}` };
  const requests = [
    {
      setupRequest: (request) => {
        const next = scenario.request(scenario.data);
        return { ...request, method: next.method ?? 'GET', path: next.path, headers: { ...headers, ...next.headers }, body: next.body };
      },
    },
  ];
  // One request first, to show what a failing endpoint answers.
  const sample = scenario.request(scenario.data);
  const probe = await globalThis
    .fetch(url + sample.path, { method: sample.method ?? 'GET', headers: { ...headers, ...sample.headers }, body: sample.body })
    .then(async (res) => ({ status: res.status, body: (await res.text()).slice(0, 300) }))
    .catch((error) => ({ status: 0, body: error.message }));
  const options = { url, connections: config.connections, requests };
  const writes = (sample.method ?? 'GET') !== 'GET';
  if (config.warmup > 0) await autocannon({ ...options, duration: config.warmup });
  const walBefore = wal && writes ? await walNow(wal) : null;
  const cpuBefore = cpuMillis(server.pid);
  const r = await autocannon({ ...options, duration: config.duration });
  const cpuAfter = cpuMillis(server.pid);
  const walWritten = walBefore ? await walSince(wal, walBefore) : null;

  const statusCodes = Object.fromEntries(Object.entries(r.statusCodeStats).map(([code, { count }]) => [code, count]));
  const unexpected = Object.entries(statusCodes).filter(([code]) => Number(code) !== expectStatus);
  const failure =
    r.requests.total === 0
      ? 'no responses'
      : unexpected.length
        ? unexpected.map(([code, count]) => `${code}×${count}`).join(', ')
        : r.errors
          ? `${r.errors} errors`
          : null;
  const result = {
    name: scenario.name,
    baseline: Boolean(scenario.baseline),
    target: scenario.target ?? null,
    requestsPerSec: r.requests.average,
    requests: r.requests.total,
    cpuMicrosPerRequest: cpuBefore === null || cpuAfter === null || r.requests.total === 0 ? null : ((cpuAfter - cpuBefore) * 1000) / r.requests.total,
    latency: { p50: r.latency.p50, p99: r.latency.p99, mean: r.latency.average, max: r.latency.max },
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes,
    ok: failure === null,
    failure,
    probe: failure ? probe : undefined,
  };
  if (scenario.sameWorkOf) result.sameWorkOf = scenario.sameWorkOf;
  if (walWritten && r.requests.total > 0) {
    // pg_stat_wal over the measured seconds (see lib/wal.mjs), per request: the app's background jobs' WAL included.
    result.walBytesPerRequest = walWritten.bytes / r.requests.total;
    result.wal = {
      ...walWritten,
      lsnBytesPerRequest: walWritten.lsnBytes / r.requests.total,
      fullPageImagesPerRequest: walWritten.fullPageImages / r.requests.total,
    };
  }
  log(
    `${scenario.name}: ${Math.round(result.requestsPerSec)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms${
      result.walBytesPerRequest !== undefined ? `, WAL ${Math.round(result.walBytesPerRequest)} B/req` : ''
    }${failure ? `, FAILED: ${failure}` : ''}`,
  );
  return result;
}

function print({ machine, database, run, app, scenarios, sameWork, budgets, commit }, suites) {
  const loaded = database.load.loaders.map((l) => `${l.name} ${JSON.stringify(l.summary)} in ${l.seconds} s${l.reused ? ' (reused)' : ''}`);
  const scenarioTable = scenarios.length
    ? `## Results (${run.connections} connections, ${run.duration} s each after ${run.warmup} s warm-up)\n\n${markdownTable(scenarios)}\n\n${
        budgets
          ? `CPU budgets: ${budgets.file} (${budgets.kind}), a scenario over ${budgets.factor}× its budget misses its target${run.smoke ? ' and fails the smoke run' : ''}.\n\n`
          : ''
      }`
    : '';
  const sameWorkList = sameWork.length
    ? `## Same-work baselines: the statements the app ran per request (pg_stat_statements, normalized)\n\n${sameWork.map(describePlan).join('\n')}\n\n`
    : '';
  console.log(`
${scenarioTable}${sameWorkList}${suites.map((s) => `${s.markdown}\n\n`).join('')}- Machine: ${machine.cores} cores (${machine.cpu}), ${machine.memory} RAM, Node ${machine.node}; CPU ${Math.round(machine.busyBefore * 100)}% busy with other work before measuring
- Database: ${database.version}, ${database.size}; ${Object.entries(database.settings)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}
- Load: ${loaded.join('; ') || 'skipped (nothing selected reads the loaded data)'}${database.load.vacuumSeconds !== null ? `; VACUUM ANALYZE ${database.load.vacuumSeconds} s; total ${database.load.seconds} s` : ''}
- Largest tables: ${Object.entries(database.tableBytes ?? {})
    .slice(0, 4)
    .map(([t, b]) => `${t} ${formatBytes(b)}`)
    .join(', ')}
- Commit: ${commit.id ?? 'unknown'}${commit.dirty ? ' with uncommitted changes' : ''}
- The app's start-up analytics rollup ended ${app.startupRollupSeconds} s after it answered /healthz`);
  for (const r of scenarios.filter((s) => s.probe)) {
    console.log(`- ${r.name}: a sample request answered ${r.probe.status}: ${r.probe.body}`);
  }
  console.log(`\nWritten to ${join('bench', 'results', 'latest.json')}`);
}

/** A captured plan, for the printed results. */
function describePlan(p) {
  if (p.error) return `- ${p.scenario}: none (${p.error})`;
  const transaction = { app: "in the app's transaction", wrapped: 'in one transaction of ours', none: 'no transaction' }[p.transaction];
  const notes = [
    `${p.statements.length} statement(s) ${transaction}`,
    `counted over ${p.countedRequests} requests, ${p.agreeing} of ${p.requests} logged requests alike`,
    ...p.notInPlan.map((s) => `per request (${s.callsPerRequest.toFixed(2)}×) but ${s.inPlan}× in the plan: \`${short(s.text, 80)}\``),
    ...p.skipped.map((text) => `left out, several statements in one string: \`${short(text, 80)}\``),
  ];
  const statements = p.statements.map(
    (s) => `  - ${s.callsPerRequest.toFixed(2)}× a request, ${s.protocol}, ${s.rowsPerCall.toFixed(1)} rows a call: \`${short(s.normalized, 140)}\``,
  );
  return [`- ${p.scenario}: ${notes.join('; ')}`, ...statements].join('\n');
}

/** The commit the bench ran (read-only git commands: the index is left alone), and whether the tree differed from it. */
function commitOf() {
  const git = (...args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  let id = null;
  try {
    id = git('rev-parse', 'HEAD');
  } catch {
    return { id: null, dirty: null };
  }
  let dirty = false;
  try {
    git('diff-index', '--quiet', 'HEAD', '--');
  } catch {
    dirty = true;
  }
  return { id, dirty };
}

/**
 * What the data takes on disk at the end of the run (tables with their indexes and TOAST), and its rows: the messages
 * and sessions loaded, the events and facts the write scenarios and suites added too (docs/scale.md's "What grows").
 */
async function storageFacts(pool) {
  const tables = ['sessions', 'messages', 'events', 'analytics_facts'];
  const storage = {};
  for (const table of tables) {
    const { rows } = await pool.query(`SELECT pg_total_relation_size($1::regclass)::float8 AS bytes, (SELECT count(*) FROM ${table})::float8 AS rows`, [table]);
    storage[table] = { ...rows[0], bytesPerRow: rows[0].rows > 0 ? rows[0].bytes / rows[0].rows : null };
  }
  const { rows } = await pool.query(`SELECT avg(pg_column_size(content))::float8 AS bytes FROM messages TABLESAMPLE SYSTEM (1)`);
  storage.messages.contentBytes = rows[0].bytes;
  return storage;
}

/** Every `verdict` in a result, however deep (a suite keeps them per measurement). */
function verdicts(value) {
  if (Array.isArray(value)) return value.flatMap(verdicts);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => (key === 'verdict' && typeof inner === 'string' ? [inner] : verdicts(inner)));
}

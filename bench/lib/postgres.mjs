// The bench's database: a throwaway PostgreSQL 15 cluster of its own, or an existing server (BENCH_DATABASE_URL).
import { spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { freePort } from './processes.mjs';

const PG_BIN = process.env.BENCH_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** The measured run: durable like production (fsync, synchronous commit, full-page writes), sized for the box. */
export const RUN_SETTINGS = {
  max_connections: 200,
  shared_buffers: '1GB',
  effective_cache_size: '4GB',
  random_page_cost: 1.1, // everything is in memory or on SSD
  max_wal_size: '4GB',
  fsync: 'on',
  synchronous_commit: 'on',
  full_page_writes: 'on',
  wal_level: 'replica',
};

/** The load only: a crash would just mean loading again, and the measured run restarts with RUN_SETTINGS. */
export const LOAD_SETTINGS = {
  ...RUN_SETTINGS,
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  wal_level: 'minimal', // tables truncated in the loading transaction then skip the WAL entirely
  max_wal_senders: 0,
  autovacuum: 'off',
  maintenance_work_mem: '1GB',
  max_parallel_maintenance_workers: 2,
  checkpoint_timeout: '1h',
  max_wal_size: '20GB',
};

/**
 * Always on in a cluster of our own, whatever else is set: what the same-work baselines' capture reads
 * (`lib/capture.mjs`). pg_stat_statements counts each statement's calls; the JSON log (`log/postgresql.json`) holds
 * each statement's text, bind values and query id once the capture turns `log_min_duration_statement` to 0 (with
 * `ALTER SYSTEM`, for the capture only: it is off while anything is measured). pg_stat_statements costs PostgreSQL a
 * little on every statement, the baselines' as much as the app's.
 */
function captureSettings(dir) {
  const library = join(dirname(PG_BIN), 'lib', 'pg_stat_statements.so');
  return {
    ...(existsSync(library) ? { shared_preload_libraries: 'pg_stat_statements' } : {}),
    logging_collector: 'on',
    log_destination: 'stderr,jsonlog',
    log_directory: join(dir, 'log'),
    log_filename: 'postgresql',
    log_rotation_age: 0,
    log_rotation_size: 0,
    log_parameter_max_length: -1,
  };
}

/** Settings worth printing with the results; read back from the server, so an external one reports its own. */
export const REPORTED_SETTINGS = [
  'fsync',
  'synchronous_commit',
  'full_page_writes',
  'wal_level',
  'shared_buffers',
  'max_connections',
  'effective_cache_size',
  'random_page_cost',
  'max_wal_size',
  'shared_preload_libraries',
];

export class Database {
  /** @param {{ url?: string, dir?: string, keep?: boolean, log: (line: string) => void }} options */
  constructor({ url, dir, keep, log }) {
    this.externalUrl = url;
    this.owned = !url;
    this.dir = dir ? resolve(dir) : undefined;
    this.reused = Boolean(dir && existsSync(join(dir, 'data', 'PG_VERSION')));
    this.keep = Boolean(keep || dir);
    this.log = log;
    this.running = false;
  }

  get url() {
    return this.externalUrl ?? `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** The cluster's JSON log (jsonlog), where the capture reads statements and their values; null on an external server. */
  get jsonLog() {
    return this.owned && this.dir ? join(this.dir, 'log', 'postgresql.json') : null;
  }

  /** Creates the cluster if needed and (re)starts it with the given settings; a no-op for an external server. */
  async start(settings) {
    if (!this.owned) return;
    if (this.running) await this.stop();
    if (!this.dir) this.dir = mkdtempSync(join(tmpdir(), 'agent-platform-bench-'));
    mkdirSync(this.dir, { recursive: true });
    if (asRoot()) chownSync(this.dir, postgresUid(), postgresUid());
    const data = join(this.dir, 'data');
    if (!existsSync(join(data, 'PG_VERSION'))) {
      await run(`${PG_BIN}/initdb`, ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8']);
    }
    this.port = await freePort();
    const all = { ...settings, ...captureSettings(this.dir) };
    const options = [`-h 127.0.0.1 -p ${this.port} -k ${this.dir}`, ...Object.entries(all).map(([k, v]) => `-c ${k}=${v}`)];
    try {
      // Its own session: a Ctrl-C reaches the bench, which then stops PostgreSQL in order.
      await run(`${PG_BIN}/pg_ctl`, ['-D', data, '-l', join(this.dir, 'pg.log'), '-o', options.join(' '), '-w', 'start'], { detached: true });
    } catch (error) {
      // Before the logging collector starts, PostgreSQL writes to pg.log; after, to log/postgresql.
      const logs = ['pg.log', join('log', 'postgresql')].map((file) => `--- ${join(this.dir, file)} ---\n${tail(join(this.dir, file))}`);
      throw new Error(`${error.message}\n${logs.join('\n')}`);
    }
    this.running = true;
  }

  async stop() {
    if (!this.owned || !this.running) return;
    this.running = false;
    await run(`${PG_BIN}/pg_ctl`, ['-D', join(this.dir, 'data'), '-m', 'fast', '-w', 'stop'], { detached: true });
  }

  /** Stops the cluster and deletes it, unless asked to keep it (BENCH_KEEP, or a BENCH_DATA_DIR to reuse). */
  async dispose() {
    if (!this.owned || !this.dir) return;
    await this.stop().catch((error) => this.log(`could not stop PostgreSQL: ${error.message}`));
    if (this.keep) {
      this.log(`kept the cluster: BENCH_DATA_DIR=${this.dir} npm run bench  (delete it with: rm -rf ${this.dir})`);
    } else {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

function asRoot() {
  return process.getuid?.() === 0;
}

let uid;
function postgresUid() {
  uid ??= Number(readFileSync('/etc/passwd', 'utf8').match(/^postgres:[^:]*:(\d+):/m)?.[1]);
  if (!Number.isInteger(uid)) throw new Error('running as root needs a "postgres" user to own the cluster');
  return uid;
}

/** Runs a PostgreSQL program, as the postgres user when we are root (PostgreSQL refuses to run as root). */
function run(command, args, { detached = false } = {}) {
  const [cmd, argv] = asRoot() ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, argv, { detached, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolvePromise(output) : reject(new Error(`${command} exited with ${code}:\n${output}`))));
  });
}

function tail(file, lines = 20) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

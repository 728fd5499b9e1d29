import Ajv from 'ajv';
import { mkdirSync, readFileSync, statfsSync } from 'node:fs';
import { availableParallelism, hostname, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { hasTokenOption, tokenFrom, TokenSourceError } from '../contract/token-source';
import type { WorkerCapacity } from '../contract/worker-channel';
import { packageRoot } from '../host/package-root';

/** A configuration the worker cannot run with: the message says what to change; the program prints it and exits 64 (EX_USAGE). */
export class WorkerConfigError extends Error {}

export interface WorkerConfig {
  /** The server's base URL, without a trailing slash. */
  url: string;
  /** The pool's enrollment token (`wkt_...`). Never logged. */
  enrollmentToken: string;
  /** Absolute; holds worker.json (the session) and, later, the computers' folders. */
  dataDir: string;
  name: string;
  hostname: string;
  labels: string[];
  capacity: WorkerCapacity;
  sandboxed: boolean;
  version: string;
  /** How computers are provisioned and sandboxed here: the server's settings of the same names, read from the worker's environment. */
  host: WorkerHostSettings;
}

export interface WorkerHostSettings {
  /** LOCAL_REPOS_DIR: the one folder local repositories may be cloned from; none, no local repository. */
  localReposDir: string | undefined;
  installScripts: boolean;
  workspaceMaxMb: number;
  memoryMb: number;
  cpuSeconds: number;
  processes: number;
  outboundAllowedHosts: string[];
}

/** What the worker reads of its machine when the environment does not say: injected by tests. */
export interface Machine {
  hostname(): string;
  cpus(): number;
  memoryMb(): number;
  /** Free space under `dir`, MiB. */
  diskMb(dir: string): number;
}

const MiB = 1024 * 1024;
const MIB_LIMIT = 2 ** 31;
/** As the server takes them (RegisterWorkerBody). */
const MAX_COMPUTERS = 256;
const MAX_LABELS = 16;
const LABEL_PATTERN = '^[a-z0-9][a-z0-9._=/-]{0,62}$';

export const thisMachine: Machine = {
  hostname: () => hostname(),
  cpus: () => availableParallelism(),
  memoryMb: () => Math.floor(totalmem() / MiB),
  diskMb: (dir) => {
    const stats = statfsSync(dir);
    return Math.floor((stats.bavail * stats.bsize) / MiB);
  },
};

export const USAGE = `Usage: agent-platform worker --url <base_url> [--token-file <path>] [--data-dir <dir>] [--name <name>] [--labels a,b]

Runs a worker of a pool: it connects out to the server (it needs no inbound port), registers what this machine can
hold, keeps its lease with heartbeats, and leaves the pool on SIGTERM or SIGINT. It provisions the computers the
server places on it (under <data-dir>/computers), runs their agents in their sandboxes, and removes what the server
no longer places on it.

The pool's enrollment token (wkt_..., made in the console or with POST /api/v0/worker-pools/{id}/enrollment-tokens)
comes from a file, --token-file <path> or WORKER_TOKEN_FILE (its content, trimmed), or from WORKER_TOKEN. Never from
the command line, which every user of the machine can read (ps).

  --data-dir <dir>   WORKER_DATA_DIR, default ./worker-data (made mode 0700): the worker's session (worker.json), so a
                     restarted worker resumes as the same worker while its lease runs
  --name <name>      default: the host name
  --labels a,b       WORKER_LABELS: what the worker offers (gpu, arch=arm64), at most ${MAX_LABELS}, each lower-case
                     letters, digits and . _ = / -

What it reports, from the machine unless set: WORKER_CPUS, WORKER_MEMORY_MB, WORKER_DISK_MB (free under the data
folder), WORKER_CAPACITY_COMPUTERS (default: one per CPU and 4 GiB of memory, at least 1). LOCAL_SANDBOX=on (the
default) runs computers in the bubblewrap sandbox (a host that cannot make it stops the worker at start, exit 1); off
is reported to the server, whose pool refuses it unless it allows unsandboxed workers. The computers' settings are
the server's: LOCAL_REPOS_DIR, LOCAL_INSTALL_SCRIPTS, LOCAL_WORKSPACE_MAX_MB, LOCAL_SANDBOX_MEMORY_MB,
LOCAL_SANDBOX_CPU_SECONDS, LOCAL_SANDBOX_PROCESSES, OUTBOUND_ALLOWED_HOSTS.
See docs/deployment.md, "Workers".`;

/**
 * The settings after the command line and the environment are merged, before the machine's defaults: each a JSON
 * Schema of the value it accepts. Numbers are read from text by `integerOf` (not Ajv's coercion, which would take
 * "1.0" or "" as numbers).
 */
const SCHEMA = {
  type: 'object',
  required: ['url', 'dataDir', 'localSandbox'],
  additionalProperties: false,
  properties: {
    url: { type: 'string', pattern: '^https?://[^\\s/?#@]+(/[^\\s?#]*)?$' },
    tokenFile: { type: 'string', minLength: 1 },
    dataDir: { type: 'string', minLength: 1 },
    name: { type: 'string', minLength: 1, maxLength: 63, pattern: '^[^\\x00-\\x1f\\x7f]*\\S[^\\x00-\\x1f\\x7f]*$' },
    labels: { type: 'array', maxItems: MAX_LABELS, uniqueItems: true, items: { type: 'string', pattern: LABEL_PATTERN } },
    computers: { type: 'integer', minimum: 1, maximum: MAX_COMPUTERS },
    cpus: { type: 'integer', minimum: 1, maximum: 1024 },
    memoryMb: { type: 'integer', minimum: 1, maximum: MIB_LIMIT },
    diskMb: { type: 'integer', minimum: 1, maximum: MIB_LIMIT },
    localSandbox: { enum: ['on', 'off'] },
    localReposDir: { type: 'string', minLength: 1 },
    installScripts: { enum: ['true', 'false', '1', '0'] },
    workspaceMaxMb: { type: 'integer', minimum: 1, maximum: MIB_LIMIT },
    sandboxMemoryMb: { type: 'integer', minimum: 64, maximum: MIB_LIMIT },
    sandboxCpuSeconds: { type: 'integer', minimum: 1, maximum: MIB_LIMIT },
    sandboxProcesses: { type: 'integer', minimum: 8, maximum: 1_000_000 },
    outboundAllowedHosts: { type: 'array', items: { type: 'string', pattern: '^[^\\s,]+$' } },
  },
} as const;

type Field = keyof typeof SCHEMA.properties;

/** What each field must be, for the message when it is not. */
const MUST_BE: Record<Field, string> = {
  url: 'an http:// or https:// base URL without credentials (the server\'s address, e.g. "https://agents.example.com")',
  tokenFile: 'a path',
  dataDir: 'a path',
  name: '1 to 63 characters, no control characters',
  labels: `at most ${MAX_LABELS} different labels, comma-separated, each lower-case letters, digits and . _ = / -, at most 63, starting with a letter or digit`,
  computers: `a whole number from 1 to ${MAX_COMPUTERS}`,
  cpus: 'a whole number from 1 to 1024',
  memoryMb: `a whole number of MiB from 1 to ${MIB_LIMIT}`,
  diskMb: `a whole number of MiB from 1 to ${MIB_LIMIT}`,
  localSandbox: 'on or off',
  localReposDir: 'a path',
  installScripts: 'true or false',
  workspaceMaxMb: `a whole number of MiB from 1 to ${MIB_LIMIT}`,
  sandboxMemoryMb: `a whole number of MiB from 64 to ${MIB_LIMIT}`,
  sandboxCpuSeconds: `a whole number of seconds from 1 to ${MIB_LIMIT}`,
  sandboxProcesses: 'a whole number from 8 to 1000000',
  outboundAllowedHosts: 'host names or host:port, comma-separated',
};

const validate = new Ajv({ allErrors: false }).compile(SCHEMA);

/**
 * The worker's configuration from its command line and environment (an option wins over its variable), with the
 * machine's defaults; the data folder is made (0700) on the way, since the disk it reports is its. `help` when asked for
 * the usage. Anything wrong is a WorkerConfigError naming the option or variable and what it must be; a message never
 * holds the token.
 */
export function readConfig(argv: string[], env: NodeJS.ProcessEnv, machine: Machine = thisMachine): WorkerConfig | 'help' {
  if (hasTokenOption(argv)) {
    throw new WorkerConfigError(
      '--token is not accepted: the command line is visible to every user of the machine (ps). Put the enrollment token in ' +
        'WORKER_TOKEN, or in a file only you can read and pass --token-file <path> (or WORKER_TOKEN_FILE).',
    );
  }
  const values = optionsOf(argv);
  if (values.help) return 'help';

  const source: Record<Field, string> = {
    url: '--url',
    tokenFile: values['token-file'] !== undefined ? '--token-file' : 'WORKER_TOKEN_FILE',
    dataDir: values['data-dir'] !== undefined ? '--data-dir' : 'WORKER_DATA_DIR',
    name: '--name',
    labels: values.labels !== undefined ? '--labels' : 'WORKER_LABELS',
    computers: 'WORKER_CAPACITY_COMPUTERS',
    cpus: 'WORKER_CPUS',
    memoryMb: 'WORKER_MEMORY_MB',
    diskMb: 'WORKER_DISK_MB',
    localSandbox: 'LOCAL_SANDBOX',
    localReposDir: 'LOCAL_REPOS_DIR',
    installScripts: 'LOCAL_INSTALL_SCRIPTS',
    workspaceMaxMb: 'LOCAL_WORKSPACE_MAX_MB',
    sandboxMemoryMb: 'LOCAL_SANDBOX_MEMORY_MB',
    sandboxCpuSeconds: 'LOCAL_SANDBOX_CPU_SECONDS',
    sandboxProcesses: 'LOCAL_SANDBOX_PROCESSES',
    outboundAllowedHosts: 'OUTBOUND_ALLOWED_HOSTS',
  };
  const labels = values.labels ?? env.WORKER_LABELS;
  const raw = withoutUnset({
    url: values.url,
    tokenFile: values['token-file'] ?? (env.WORKER_TOKEN_FILE || undefined),
    dataDir: values['data-dir'] ?? (env.WORKER_DATA_DIR || './worker-data'),
    name: values.name,
    labels: labels === undefined || labels.trim() === '' ? undefined : labels.split(',').map((label) => label.trim()),
    computers: integerOf(env.WORKER_CAPACITY_COMPUTERS),
    cpus: integerOf(env.WORKER_CPUS),
    memoryMb: integerOf(env.WORKER_MEMORY_MB),
    diskMb: integerOf(env.WORKER_DISK_MB),
    localSandbox: env.LOCAL_SANDBOX || 'on',
    localReposDir: env.LOCAL_REPOS_DIR || undefined,
    installScripts: env.LOCAL_INSTALL_SCRIPTS || undefined,
    workspaceMaxMb: integerOf(env.LOCAL_WORKSPACE_MAX_MB),
    sandboxMemoryMb: integerOf(env.LOCAL_SANDBOX_MEMORY_MB),
    sandboxCpuSeconds: integerOf(env.LOCAL_SANDBOX_CPU_SECONDS),
    sandboxProcesses: integerOf(env.LOCAL_SANDBOX_PROCESSES),
    outboundAllowedHosts: env.OUTBOUND_ALLOWED_HOSTS?.trim()
      ? env.OUTBOUND_ALLOWED_HOSTS.split(',')
          .map((host) => host.trim())
          .filter(Boolean)
      : undefined,
  });
  if (raw.url === undefined) throw new WorkerConfigError("The server's URL (--url <base_url>) is required.");
  if (!validate(raw) || !URL.canParse(raw.url)) {
    const [error] = validate.errors ?? [];
    const field = (error ? error.instancePath.split('/')[1] || (error.params as { missingProperty?: string }).missingProperty : 'url') as Field;
    const value = (raw as Record<string, unknown>)[field];
    const shown = Array.isArray(value) ? value.join(',') : typeof value === 'string' ? withoutCredentials(value) : value;
    throw new WorkerConfigError(`${source[field]} must be ${MUST_BE[field]}, not ${JSON.stringify(shown)}.`);
  }
  const settings = raw as unknown as Settings;

  let enrollmentToken: string | undefined;
  try {
    enrollmentToken = tokenFrom(settings.tokenFile, env.WORKER_TOKEN, "a worker pool's enrollment token (wkt_...)");
  } catch (error) {
    if (error instanceof TokenSourceError) throw new WorkerConfigError(error.message);
    throw error;
  }
  if (!enrollmentToken) {
    throw new WorkerConfigError(
      "The pool's enrollment token is required: put it in a file and pass --token-file <path> (or WORKER_TOKEN_FILE), or set WORKER_TOKEN.",
    );
  }

  const dataDir = resolve(settings.dataDir);
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new WorkerConfigError(`${source.dataDir}: the folder ${dataDir} cannot be made: ${(error as Error).message}`);
  }
  const cpus = settings.cpus ?? machine.cpus();
  const memoryMb = settings.memoryMb ?? machine.memoryMb();
  const host = machine.hostname();
  return {
    url: settings.url.replace(/\/+$/, ''),
    enrollmentToken,
    dataDir,
    name: settings.name ?? host.slice(0, 63),
    hostname: host,
    labels: settings.labels ?? [],
    capacity: {
      computers: settings.computers ?? Math.min(MAX_COMPUTERS, Math.max(1, Math.min(cpus, Math.floor(memoryMb / 4096)))),
      cpus,
      memoryMb,
      diskMb: settings.diskMb ?? Math.max(1, Math.min(MIB_LIMIT, machine.diskMb(dataDir))),
    },
    sandboxed: settings.localSandbox === 'on',
    version: versionOf(),
    // The server's defaults (src/config/settings.ts), which a worker does not import.
    host: {
      localReposDir: settings.localReposDir === undefined ? undefined : resolve(settings.localReposDir),
      installScripts: settings.installScripts === 'true' || settings.installScripts === '1',
      workspaceMaxMb: settings.workspaceMaxMb ?? 10_240,
      memoryMb: settings.sandboxMemoryMb ?? 4096,
      cpuSeconds: settings.sandboxCpuSeconds ?? 3600,
      processes: settings.sandboxProcesses ?? 512,
      outboundAllowedHosts: settings.outboundAllowedHosts ?? [],
    },
  };
}

/** The settings once the schema holds. */
interface Settings {
  url: string;
  tokenFile?: string;
  dataDir: string;
  name?: string;
  labels?: string[];
  computers?: number;
  cpus?: number;
  memoryMb?: number;
  diskMb?: number;
  localSandbox: 'on' | 'off';
  localReposDir?: string;
  installScripts?: 'true' | 'false' | '1' | '0';
  workspaceMaxMb?: number;
  sandboxMemoryMb?: number;
  sandboxCpuSeconds?: number;
  sandboxProcesses?: number;
  outboundAllowedHosts?: string[];
}

function optionsOf(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: {
        url: { type: 'string' },
        'token-file': { type: 'string' },
        'data-dir': { type: 'string' },
        name: { type: 'string' },
        labels: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (error) {
    throw new WorkerConfigError((error as Error).message);
  }
}

/** A URL's user and password (`https://user:secret@host`) are not said back. */
function withoutCredentials(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1***@');
}

/** A whole number written in digits; anything else is left as it is written, for the schema to refuse by name. */
function integerOf(text: string | undefined): number | string | undefined {
  if (text === undefined || text === '') return undefined;
  return /^\d{1,10}$/.test(text.trim()) ? Number(text.trim()) : text;
}

function withoutUnset<T extends Record<string, unknown>>(object: T): Partial<T> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** This program's version, as the server records it (the package's). */
function versionOf(): string {
  return (JSON.parse(readFileSync(join(packageRoot(__dirname), 'package.json'), 'utf8')) as { version: string }).version;
}

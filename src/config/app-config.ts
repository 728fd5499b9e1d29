import { plainToInstance, Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, IsUrl, Max, Min, Matches, MinLength, validateSync } from 'class-validator';
import { resolve } from 'node:path';

const toInt = ({ value }: { value: unknown }) => (value === undefined || value === '' ? undefined : Number(value));
const toBoolean = ({ value }: { value: unknown }) =>
  value === undefined || value === '' ? undefined : value === 'true' || value === '1' ? true : value === 'false' || value === '0' ? false : value;
const emptyToUndefined = ({ value }: { value: unknown }) => (value === '' ? undefined : value);
const onOff = ({ value }: { value: unknown }) =>
  value === undefined || value === ''
    ? undefined
    : ['on', 'true', '1'].includes(String(value))
      ? true
      : ['off', 'false', '0'].includes(String(value))
        ? false
        : value;

const MiB = 1024 * 1024;
/** Comma-separated hosts (names, IPv4, bracketed IPv6), each optionally with `:port`. */
const HOST_LIST = /^\s*(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?(\s*,\s*(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?)*\s*$/;

/** 32 MiB: room for base64 images and PDFs in a message, small enough to bound memory per request. */
export const DEFAULT_MESSAGE_BODY_LIMIT_BYTES = 32 * MiB;

/**
 * Every setting the server reads from its environment, validated once at boot.
 * Fields marked secret are never logged (see `describe()`).
 */
export class AppConfig {
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  @IsString()
  HOST = '127.0.0.1';

  /** Public address of the API (`{base_url}`); defaults to this server's own address. */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsUrl({ require_tld: false, require_protocol: true })
  BASE_URL?: string;

  /** Public address of the web application (`{app_url}`); defaults to BASE_URL. */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsUrl({ require_tld: false, require_protocol: true })
  APP_URL?: string;

  /** Folder of the embedded PostgreSQL (PGlite); unused when DATABASE_URL is set. */
  @IsString()
  DATA_DIR = './data';

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  DATABASE_URL?: string;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(200)
  DATABASE_POOL_SIZE = 10;

  /** HS256 secret for JWTs. Secret. */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'JWT_SECRET must be at least 32 characters' })
  JWT_SECRET?: string;

  /** JWKS address whose keys verify JWTs (RS256, ES256, EdDSA, ...). */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsUrl({ require_tld: false, require_protocol: true })
  JWT_JWKS_URL?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  JWT_ISSUER?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  JWT_AUDIENCE?: string;

  /**
   * Oldest JWT accepted, in seconds since its `iat`; a JWT whose lifetime (`exp - iat`) is longer is refused
   * too, so a token minted to last for ever is not accepted for ever.
   */
  @Transform(toInt)
  @IsInt()
  @Min(60)
  JWT_MAX_AGE_SECONDS = 86_400;

  /** How long an idle pooled connection is kept. Default: never closed on PGlite (one session), 10 s on PostgreSQL. */
  @Transform(toInt)
  @IsOptional()
  @IsInt()
  @Min(0)
  DATABASE_IDLE_TIMEOUT_MS?: number;

  /**
   * Which proxies in front of the server to believe about the client's address (X-Forwarded-For),
   * for the anonymous rate limit and the logs: unset (none), `true` (any), a hop count, or
   * comma-separated addresses and CIDR ranges of the proxies.
   */
  @Transform(emptyToUndefined)
  @IsOptional()
  @Matches(/^(true|\d{1,2}|[0-9a-fA-F.:/]+(\s*,\s*[0-9a-fA-F.:/]+)*)$/, {
    message: 'TRUST_PROXY must be true, a hop count, or comma-separated addresses and CIDR ranges',
  })
  TRUST_PROXY?: string;

  /** How long a client has to send a whole request, headers and body (408 after it); 0: no limit. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  REQUEST_TIMEOUT_MS = 120_000;

  /** Largest request body on every route but the add-message ones (413 above it). */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  BODY_LIMIT_BYTES = MiB;

  /** Largest request body on the routes that add messages (base64 images and files ride in them). */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  MESSAGE_BODY_LIMIT_BYTES = DEFAULT_MESSAGE_BODY_LIMIT_BYTES;

  /** Deepest nesting of arrays and objects a JSON body may have (400 above it). */
  @Transform(toInt)
  @IsInt()
  @Min(8)
  @Max(1000)
  JSON_MAX_DEPTH = 64;

  /** Requests a minute per credential (API key, JWT subject, computer token); 0 turns the limit off. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  RATE_LIMIT_CREDENTIAL_PER_MINUTE = 1_200;

  /** Requests a minute per organization, all its credentials together; 0 turns the limit off. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  RATE_LIMIT_ORGANIZATION_PER_MINUTE = 6_000;

  /** Requests a minute per client address without a valid credential; 0 turns the limit off. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  RATE_LIMIT_ANONYMOUS_PER_MINUTE = 120;

  /** Long polls (`waitMs`) waiting at once per computer; more answer 429. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  LONG_POLLS_PER_COMPUTER = 10;

  /** Long polls waiting at once per organization; more answer 429. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  LONG_POLLS_PER_ORGANIZATION = 200;

  /** Bytes of messages one page may carry; a single larger message still comes, alone. */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  MESSAGE_PAGE_MAX_BYTES = 16 * MiB;

  /** Computers an organization may have (creating one more: 409 `quota_exceeded`). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  COMPUTERS_PER_ORGANIZATION = 100;

  /** Managed computers of one organization provisioning at once (creating or retrying one more: 429 `quota_exceeded`). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  PROVISIONING_PER_ORGANIZATION = 5;

  /**
   * Agents this server runs at once for one organization's managed `local` computers: creating one
   * more `local` computer is 409 `quota_exceeded`; beyond it (the quota lowered) the newest get none.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  LOCAL_AGENTS_PER_ORGANIZATION = 10;

  /** How long shutdown waits for in-flight requests before closing connections. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  SHUTDOWN_TIMEOUT_MS = 10_000;

  /** How long a credential's lookup is reused (0: every request reads the database). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(60_000)
  AUTH_CACHE_MS = 1_000;

  /** How long an agent's turn lasts without a sign of life before another agent may take the work. */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  AGENT_LEASE_MS = 300_000;

  /**
   * How long an interrupted turn's agent has to stop and end its turn: past this the turn's lease
   * runs out (heartbeats no longer renew it) and the server ends the turn itself, `idle`.
   */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  AGENT_INTERRUPT_GRACE_MS = 15_000;

  /**
   * Each instance ends interrupted turns whose agent did not end them in time, and denies tool
   * approvals nobody answered before their timeout, when they fall due (it learns of them from the
   * events); and every this often in case it missed some (a restart).
   */
  @Transform(toInt)
  @IsInt()
  @Min(50)
  TURN_SWEEP_MS = 60_000;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /**
   * `pretty`: one readable line per event (coloured at a terminal; NO_COLOR and FORCE_COLOR are
   * honoured); `json`: one JSON object per line, for log collectors. Default: pretty when stdout is
   * a terminal, JSON otherwise.
   */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsIn(['pretty', 'json'])
  LOG_FORMAT?: 'pretty' | 'json';

  /** Where the `local` provider prepares computers' workspaces (default: DATA_DIR/computers). */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  COMPUTERS_DIR?: string;

  /**
   * The one directory whose git repositories (local paths and file:// URLs) computers may clone.
   * Unset by default: no user can make the server clone its own files.
   */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  LOCAL_REPOS_DIR?: string;

  /**
   * Whether installing a managed computer's dependencies may run the packages' own scripts
   * (npm, pnpm, yarn, bun lifecycle scripts). Off by default: with them, anyone who may create a
   * managed computer can run code on the server's host.
   */
  @Transform(toBoolean)
  @IsBoolean({ message: 'LOCAL_INSTALL_SCRIPTS must be true or false' })
  LOCAL_INSTALL_SCRIPTS = false;

  /**
   * Whether the server runs the reference agent of each active managed `local` computer (`on`, the
   * default) or leaves that to the operator (`off`). With several instances, one runs each agent.
   */
  @Transform(onOff)
  @IsBoolean({ message: 'LOCAL_AGENTS must be on or off' })
  LOCAL_AGENTS = true;

  /**
   * Whether everything run for a managed `local` computer (clone, install, its agent, the agent's tools and hooks)
   * runs in that computer's bubblewrap sandbox (`on`, the default). `off` trusts every member who may create a
   * managed computer with the server's host: its files, its environment, its network.
   */
  @Transform(onOff)
  @IsBoolean({ message: 'LOCAL_SANDBOX must be on or off' })
  LOCAL_SANDBOX = true;

  /** Memory (data segment, MiB) each process of a sandboxed computer may use. */
  @Transform(toInt)
  @IsInt()
  @Min(64)
  LOCAL_SANDBOX_MEMORY_MB = 4096;

  /** CPU time (seconds) each process of a sandboxed computer may use before the kernel stops it. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  LOCAL_SANDBOX_CPU_SECONDS = 3600;

  /** Processes a sandboxed computer may run at once (enforced when the server runs as root: each computer has its own uid). */
  @Transform(toInt)
  @IsInt()
  @Min(8)
  LOCAL_SANDBOX_PROCESSES = 512;

  /** Disk a computer's workspace may use (MiB): a run that takes it past this is stopped. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  LOCAL_WORKSPACE_MAX_MB = 10_240;

  /** How often each instance looks for provisioning steps to run. */
  @Transform(toInt)
  @IsInt()
  @Min(50)
  PROVISIONING_POLL_MS = 1_000;

  /** A running step's claim lasts this long without renewal; then another instance takes it over. */
  @Transform(toInt)
  @IsInt()
  @Min(500)
  PROVISIONING_LEASE_MS = 30_000;

  /** A step still running after this long is stopped and fails. */
  @Transform(toInt)
  @IsInt()
  @Min(1_000)
  PROVISIONING_STEP_TIMEOUT_MS = 600_000;

  /** Steps one instance runs at the same time (0: this instance provisions nothing). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(64)
  PROVISIONING_CONCURRENCY = 2;

  /**
   * Keys that encrypt secrets stored in the database (custom models' API keys): 32 bytes each,
   * base64 or hex, comma-separated; the first encrypts, all decrypt. Required with DATABASE_URL;
   * on the embedded database one is made in DATA_DIR/secrets.key. Secret.
   */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  SECRETS_KEY?: string;

  /** How long an organization's enterprise controls are reused before being read again (0: every time). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(60_000)
  CONTROLS_CACHE_MS = 1_000;

  /** How long the event log keeps events: streams resume, and the audit log reaches back, this far. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3650)
  EVENT_RETENTION_DAYS = 30;

  /**
   * How often each instance looks for events a durable listener has not handled yet (a crash
   * between commit and dispatch, a lost notification, a listener's retry). New events are handled at once.
   */
  @Transform(toInt)
  @IsInt()
  @Min(50)
  EVENT_LISTENER_SWEEP_MS = 5_000;

  /** How often an open event stream sends a heartbeat comment, so proxies and clients know it is alive. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(300_000)
  EVENT_STREAM_HEARTBEAT_MS = 15_000;

  /** Event streams (server-sent events) one credential may hold open at once on an instance; more answer 429. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  EVENT_STREAMS_PER_CREDENTIAL = 10;

  /** Event streams one organization may hold open at once on an instance; more answer 429. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  EVENT_STREAMS_PER_ORGANIZATION = 200;

  /** How often each instance deletes sessions older than their organization's `sessionRetentionDays`. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  RETENTION_SWEEP_MS = 3_600_000;

  /** How often each instance rolls up analytics facts of closed days (it also runs at start-up). */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  ANALYTICS_ROLLUP_MS = 600_000;

  /**
   * Hosts the server may reach on a user's behalf from a computer's sandbox (its proxy; later webhooks)
   * although their addresses are not public: loopback, private, link-local, cloud metadata ...
   * Comma-separated host names or IP addresses (IPv6 in brackets), each optionally with `:port` to allow
   * that port only; matched exactly (letter case and a trailing dot aside), never by suffix or by the
   * address a name resolves to. Unset: none, every such address is refused.
   */
  @Transform(emptyToUndefined)
  @IsOptional()
  @Matches(HOST_LIST, { message: 'OUTBOUND_ALLOWED_HOSTS must be comma-separated host names or IP addresses (IPv6 in brackets), each optionally with :port' })
  OUTBOUND_ALLOWED_HOSTS?: string;

  /**
   * Hosts the model relay may reach although their addresses are not public: self-hosted models on a
   * private network or on this machine. The same form and matching as OUTBOUND_ALLOWED_HOSTS, and a list
   * of its own, so allowing a model server does not open it to every sandbox. Unset: none.
   */
  @Transform(emptyToUndefined)
  @IsOptional()
  @Matches(HOST_LIST, {
    message: 'MODEL_RELAY_ALLOWED_HOSTS must be comma-separated host names or IP addresses (IPv6 in brackets), each optionally with :port',
  })
  MODEL_RELAY_ALLOWED_HOSTS?: string;

  /** How long one relayed chat completion may take, streamed or not (models can think for minutes). */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  MODEL_RELAY_TIMEOUT_MS = 600_000;

  /** The most a model's answer may hold (a JSON body, or a whole stream) before the relay gives up on it. */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  MODEL_RELAY_MAX_RESPONSE_BYTES = 16 * MiB;

  /** Relayed model calls one computer may have in progress at once on an instance (429 `too_many_relays` past it). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  MODEL_RELAY_CONCURRENCY_PER_COMPUTER = 8;

  /**
   * Hosts webhooks may reach although their addresses are not public (a receiver on a private network
   * or on this machine), and the only hosts a webhook URL may name with http rather than https. The same
   * form and matching as OUTBOUND_ALLOWED_HOSTS, a list of its own. Unset: public https URLs only.
   */
  @Transform(emptyToUndefined)
  @IsOptional()
  @Matches(HOST_LIST, { message: 'WEBHOOK_ALLOWED_HOSTS must be comma-separated host names or IP addresses (IPv6 in brackets), each optionally with :port' })
  WEBHOOK_ALLOWED_HOSTS?: string;

  /** How long a webhook receiver has to answer one delivery attempt (then the attempt failed and is retried). */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(120_000)
  WEBHOOK_TIMEOUT_MS = 15_000;

  /**
   * How long past WEBHOOK_TIMEOUT_MS a claimed delivery stays the claiming instance's (time to record
   * the attempt); an instance that dies mid-attempt leaves its deliveries to the others after that.
   */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  WEBHOOK_LEASE_MARGIN_MS = 30_000;

  /**
   * The waits before each retry of a failed delivery, comma-separated milliseconds (each with ±20% jitter);
   * after the last retry fails the delivery is failed. The default retries 7 times over about 27 hours:
   * 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
   */
  @Transform(emptyToUndefined)
  @IsOptional()
  @Matches(/^\d{1,10}(,\d{1,10}){0,19}$/, { message: 'WEBHOOK_RETRY_SCHEDULE_MS must be 1 to 20 comma-separated whole numbers of milliseconds' })
  WEBHOOK_RETRY_SCHEDULE_MS?: string;

  /** A webhook whose deliveries have failed without a single success for this long is disabled (`webhook.disabled`). */
  @Transform(toInt)
  @IsInt()
  @Min(1_000)
  WEBHOOK_DISABLE_AFTER_MS = 3 * 86_400_000;

  /**
   * How often each instance looks for deliveries due, at the most: new ones are sent at once by the
   * instance that queued them, and an instance sleeps until the next retry due.
   */
  @Transform(toInt)
  @IsInt()
  @Min(50)
  WEBHOOK_POLL_MS = 30_000;

  /** Delivery attempts one instance makes at once (0: this instance sends none). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(256)
  WEBHOOK_CONCURRENCY = 8;

  static readonly secrets: ReadonlyArray<keyof AppConfig> = ['JWT_SECRET', 'DATABASE_URL', 'SECRETS_KEY'];

  get dataDir(): string {
    return resolve(this.DATA_DIR);
  }

  get baseUrl(): string {
    const host = this.HOST === '0.0.0.0' || this.HOST === '::' ? '127.0.0.1' : this.HOST;
    return (this.BASE_URL ?? `http://${host}:${this.PORT}`).replace(/\/+$/, '');
  }

  get appUrl(): string {
    return (this.APP_URL ?? this.baseUrl).replace(/\/+$/, '');
  }

  get computersDir(): string {
    return resolve(this.COMPUTERS_DIR ?? resolve(this.DATA_DIR, 'computers'));
  }

  get localReposDir(): string | undefined {
    return this.LOCAL_REPOS_DIR === undefined ? undefined : resolve(this.LOCAL_REPOS_DIR);
  }

  /** TRUST_PROXY as Fastify's `trustProxy` takes it. */
  get trustProxy(): boolean | string[] | ((address: string, hop: number) => boolean) {
    const value = this.TRUST_PROXY;
    if (value === undefined) return false;
    if (value === 'true') return true;
    if (/^\d+$/.test(value)) {
      const hops = Number(value);
      return (_address, hop) => hop < hops;
    }
    return value.split(',').map((part) => part.trim());
  }

  /** OUTBOUND_ALLOWED_HOSTS as a list (empty when unset). */
  get outboundAllowedHosts(): string[] {
    return hostList(this.OUTBOUND_ALLOWED_HOSTS);
  }

  /** MODEL_RELAY_ALLOWED_HOSTS as a list (empty when unset). */
  get modelRelayAllowedHosts(): string[] {
    return hostList(this.MODEL_RELAY_ALLOWED_HOSTS);
  }

  /** WEBHOOK_ALLOWED_HOSTS as a list (empty when unset). */
  get webhookAllowedHosts(): string[] {
    return hostList(this.WEBHOOK_ALLOWED_HOSTS);
  }

  /** WEBHOOK_RETRY_SCHEDULE_MS as a list of waits. */
  get webhookRetrySchedule(): number[] {
    return (this.WEBHOOK_RETRY_SCHEDULE_MS ?? '5000,300000,1800000,7200000,18000000,36000000,36000000').split(',').map(Number);
  }

  /** LOG_FORMAT, or pretty at a terminal and JSON otherwise. */
  get logFormat(): 'pretty' | 'json' {
    return this.LOG_FORMAT ?? (process.stdout.isTTY ? 'pretty' : 'json');
  }

  /** Where the data is, for the start-up lines: the embedded database's folder, or PostgreSQL without its password. */
  get dataLocation(): string {
    if (!this.DATABASE_URL) return `embedded PostgreSQL (PGlite) in ${resolve(this.DATA_DIR)}`;
    try {
      const url = new URL(this.DATABASE_URL);
      const user = url.username ? `${decodeURIComponent(url.username)}@` : '';
      return `PostgreSQL ${user}${url.host}${url.pathname.length > 1 ? url.pathname : ''}`;
    } catch {
      return 'PostgreSQL (DATABASE_URL)';
    }
  }

  get engine(): 'postgres' | 'pglite' {
    return this.DATABASE_URL ? 'postgres' : 'pglite';
  }

  /** The settings as they may be logged: secrets masked. */
  describe(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const key of ENV_KEYS) {
      const value = this[key];
      out[key] = AppConfig.secrets.includes(key) && value ? '***' : value;
    }
    return out;
  }
}

const ENV_KEYS = [
  'PORT',
  'HOST',
  'BASE_URL',
  'APP_URL',
  'DATA_DIR',
  'DATABASE_URL',
  'DATABASE_POOL_SIZE',
  'JWT_SECRET',
  'JWT_JWKS_URL',
  'JWT_ISSUER',
  'JWT_AUDIENCE',
  'JWT_MAX_AGE_SECONDS',
  'DATABASE_IDLE_TIMEOUT_MS',
  'TRUST_PROXY',
  'REQUEST_TIMEOUT_MS',
  'BODY_LIMIT_BYTES',
  'MESSAGE_BODY_LIMIT_BYTES',
  'JSON_MAX_DEPTH',
  'RATE_LIMIT_CREDENTIAL_PER_MINUTE',
  'RATE_LIMIT_ORGANIZATION_PER_MINUTE',
  'RATE_LIMIT_ANONYMOUS_PER_MINUTE',
  'LONG_POLLS_PER_COMPUTER',
  'LONG_POLLS_PER_ORGANIZATION',
  'MESSAGE_PAGE_MAX_BYTES',
  'COMPUTERS_PER_ORGANIZATION',
  'PROVISIONING_PER_ORGANIZATION',
  'LOCAL_AGENTS_PER_ORGANIZATION',
  'SHUTDOWN_TIMEOUT_MS',
  'AGENT_LEASE_MS',
  'AGENT_INTERRUPT_GRACE_MS',
  'TURN_SWEEP_MS',
  'AUTH_CACHE_MS',
  'LOG_LEVEL',
  'LOG_FORMAT',
  'COMPUTERS_DIR',
  'LOCAL_REPOS_DIR',
  'LOCAL_INSTALL_SCRIPTS',
  'LOCAL_AGENTS',
  'LOCAL_SANDBOX',
  'LOCAL_SANDBOX_MEMORY_MB',
  'LOCAL_SANDBOX_CPU_SECONDS',
  'LOCAL_SANDBOX_PROCESSES',
  'LOCAL_WORKSPACE_MAX_MB',
  'PROVISIONING_POLL_MS',
  'PROVISIONING_LEASE_MS',
  'PROVISIONING_STEP_TIMEOUT_MS',
  'PROVISIONING_CONCURRENCY',
  'SECRETS_KEY',
  'CONTROLS_CACHE_MS',
  'RETENTION_SWEEP_MS',
  'EVENT_RETENTION_DAYS',
  'EVENT_LISTENER_SWEEP_MS',
  'EVENT_STREAM_HEARTBEAT_MS',
  'EVENT_STREAMS_PER_CREDENTIAL',
  'EVENT_STREAMS_PER_ORGANIZATION',
  'ANALYTICS_ROLLUP_MS',
  'OUTBOUND_ALLOWED_HOSTS',
  'MODEL_RELAY_ALLOWED_HOSTS',
  'MODEL_RELAY_TIMEOUT_MS',
  'MODEL_RELAY_MAX_RESPONSE_BYTES',
  'MODEL_RELAY_CONCURRENCY_PER_COMPUTER',
  'WEBHOOK_ALLOWED_HOSTS',
  'WEBHOOK_TIMEOUT_MS',
  'WEBHOOK_LEASE_MARGIN_MS',
  'WEBHOOK_RETRY_SCHEDULE_MS',
  'WEBHOOK_DISABLE_AFTER_MS',
  'WEBHOOK_POLL_MS',
  'WEBHOOK_CONCURRENCY',
] as const satisfies ReadonlyArray<keyof AppConfig>;

export class ConfigError extends Error {}

function hostList(value: string | undefined): string[] {
  return value === undefined ? [] : value.split(',').map((entry) => entry.trim());
}

/** Reads and validates the configuration; throws a ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const raw: Record<string, unknown> = {};
  for (const key of ENV_KEYS) if (env[key] !== undefined) raw[key] = env[key];
  const config = plainToInstance(AppConfig, raw, { exposeDefaultValues: true });
  const errors = validateSync(config, { forbidUnknownValues: false });
  if (errors.length > 0) {
    const lines = errors.map((e) => `${e.property}: ${Object.values(e.constraints ?? {}).join(', ')}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return config;
}

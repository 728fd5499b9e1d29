/**
 * The server's settings, each an environment variable, described once as a JSON Schema: the values it accepts
 * and their defaults. `AppConfig`'s fields are derived from it (`Settings`), and `loadConfig` validates with it.
 *
 * An environment variable is text; before validation each is read by the kind of its setting (`readSetting`).
 * Ajv's own coercion is not used: its rules are not these (it reads neither 1/0 nor on/off as booleans).
 */

const MiB = 1024 * 1024;

/** 32 MiB: room for base64 images and PDFs in a message, small enough to bound memory per request. */
export const DEFAULT_MESSAGE_BODY_LIMIT_BYTES = 32 * MiB;

/** Comma-separated hosts (names, IPv4, bracketed IPv6), each optionally with `:port`. */
const HOST_LIST = String.raw`^\s*(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?(\s*,\s*(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?)*\s*$`;
const HOST_LIST_MUST_BE = 'comma-separated host names or IP addresses (IPv6 in brackets), each optionally with :port';

/** One setting: a JSON Schema of its value, with the extensions below. */
export interface Setting {
  type: 'integer' | 'boolean' | 'string';
  default?: number | boolean | string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  pattern?: string;
  enum?: readonly string[];
  /** `server-url`: see `isServerUrl`. */
  format?: 'server-url';
  /** A boolean also written on/off. */
  'x-on-off'?: true;
  /** Never logged (`describe()` masks it). */
  'x-secret'?: true;
  /** What the value must be, for the message when it is not; said by the schema for integers, booleans, lists and URLs. */
  'x-must-be'?: string;
}

/** The keywords of ours that `Setting` adds to JSON Schema. */
export const SETTING_KEYWORDS = ['x-on-off', 'x-secret', 'x-must-be'];

export const SETTINGS = {
  PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000 },

  HOST: { type: 'string', default: '127.0.0.1' },

  /** Public address of the API (`{base_url}`); defaults to this server's own address. */
  BASE_URL: { type: 'string', format: 'server-url' },

  /** Public address of the web application (`{app_url}`); defaults to BASE_URL. */
  APP_URL: { type: 'string', format: 'server-url' },

  /** Folder of the embedded PostgreSQL (PGlite); unused when DATABASE_URL is set. */
  DATA_DIR: { type: 'string', default: './data' },

  DATABASE_URL: { type: 'string', 'x-secret': true },

  DATABASE_POOL_SIZE: { type: 'integer', minimum: 1, maximum: 200, default: 10 },

  /** HS256 secret for JWTs. */
  JWT_SECRET: { type: 'string', minLength: 32, 'x-secret': true, 'x-must-be': 'at least 32 characters' },

  /** JWKS address whose keys verify JWTs (RS256, ES256, EdDSA, ...). */
  JWT_JWKS_URL: { type: 'string', format: 'server-url' },

  JWT_ISSUER: { type: 'string' },

  JWT_AUDIENCE: { type: 'string' },

  /**
   * Oldest JWT accepted, in seconds since its `iat`; a JWT whose lifetime (`exp - iat`) is longer is refused
   * too, so a token minted to last for ever is not accepted for ever.
   */
  JWT_MAX_AGE_SECONDS: { type: 'integer', minimum: 60, default: 86_400 },

  /** How long an idle pooled connection is kept. Default: never closed on PGlite (one session), 10 s on PostgreSQL. */
  DATABASE_IDLE_TIMEOUT_MS: { type: 'integer', minimum: 0 },

  /**
   * Which proxies in front of the server to believe about the client's address (X-Forwarded-For),
   * for the anonymous rate limit and the logs: unset (none), `true` (any), a hop count, or
   * comma-separated addresses and CIDR ranges of the proxies.
   */
  TRUST_PROXY: {
    type: 'string',
    pattern: String.raw`^(true|\d{1,2}|[0-9a-fA-F.:/]+(\s*,\s*[0-9a-fA-F.:/]+)*)$`,
    'x-must-be': 'true, a hop count, or comma-separated addresses and CIDR ranges',
  },

  /** How long a client has to send a whole request, headers and body (408 after it); 0: no limit. */
  REQUEST_TIMEOUT_MS: { type: 'integer', minimum: 0, default: 120_000 },

  /** Largest request body on every route but the add-message ones (413 above it). */
  BODY_LIMIT_BYTES: { type: 'integer', minimum: 1024, default: MiB },

  /** Largest request body on the routes that add messages (base64 images and files ride in them). */
  MESSAGE_BODY_LIMIT_BYTES: { type: 'integer', minimum: 1024, default: DEFAULT_MESSAGE_BODY_LIMIT_BYTES },

  /** Deepest nesting of arrays and objects a JSON body may have (400 above it). */
  JSON_MAX_DEPTH: { type: 'integer', minimum: 8, maximum: 1000, default: 64 },

  /**
   * Most values (array items and object members, every level counted) a JSON body may hold (400 above it): what parsing
   * a body costs the event loop follows its values, not its bytes (32 MiB of zeros took 330 ms; of base64, 30 ms).
   */
  JSON_MAX_VALUES: { type: 'integer', minimum: 1000, default: 100_000 },

  /** Requests a minute per credential (API key, JWT subject, computer token); 0 turns the limit off. */
  RATE_LIMIT_CREDENTIAL_PER_MINUTE: { type: 'integer', minimum: 0, default: 1_200 },

  /** Requests a minute per organization, all its credentials together; 0 turns the limit off. */
  RATE_LIMIT_ORGANIZATION_PER_MINUTE: { type: 'integer', minimum: 0, default: 6_000 },

  /** Requests a minute per client address without a valid credential; 0 turns the limit off. */
  RATE_LIMIT_ANONYMOUS_PER_MINUTE: { type: 'integer', minimum: 0, default: 120 },

  /**
   * Requests a minute per worker on the worker channel, its own budget rather than its organization's; 0 turns the limit
   * off. A worker sends a heartbeat every few seconds, a claim per step or half minute, and a step's log once a second.
   */
  WORKER_RATE_LIMIT_PER_MINUTE: { type: 'integer', minimum: 0, default: 1_200 },

  /** Long polls (`waitMs`) waiting at once per computer; more answer 429. */
  LONG_POLLS_PER_COMPUTER: { type: 'integer', minimum: 1, default: 10 },

  /** Long polls waiting at once per organization; more answer 429. */
  LONG_POLLS_PER_ORGANIZATION: { type: 'integer', minimum: 1, default: 200 },

  /** Bytes of messages one page may carry; a single larger message still comes, alone. */
  MESSAGE_PAGE_MAX_BYTES: { type: 'integer', minimum: 1024, default: 16 * MiB },

  /** Computers an organization may have (creating one more: 409 `quota_exceeded`). */
  COMPUTERS_PER_ORGANIZATION: { type: 'integer', minimum: 1, default: 100 },

  /** Worker pools an organization may have (creating one more: 409 `quota_exceeded`). */
  WORKER_POOLS_PER_ORGANIZATION: { type: 'integer', minimum: 1, default: 20 },

  /** Workers online at once in one pool (registering one more: 409 `quota_exceeded`). */
  WORKERS_PER_POOL: { type: 'integer', minimum: 1, default: 100 },

  /** How long a worker stays online without a heartbeat; it heartbeats every third of it, and is `lost` after it. */
  WORKER_LEASE_MS: { type: 'integer', minimum: 1000, default: 30_000 },

  /** How often an instance looks for workers whose lease ran out (the `computers.workers` job). */
  WORKER_SWEEP_MS: { type: 'integer', minimum: 100, default: 5_000 },
  WORKER_PLACEMENT_TIMEOUT_MS: { type: 'integer', minimum: 1_000, default: 600_000 },

  /** Managed computers of one organization provisioning at once (creating or retrying one more: 429 `quota_exceeded`). */
  PROVISIONING_PER_ORGANIZATION: { type: 'integer', minimum: 1, default: 5 },

  /**
   * Agents this server runs at once for one organization's managed `local` computers: creating one
   * more `local` computer is 409 `quota_exceeded`; beyond it (the quota lowered) the newest get none.
   */
  LOCAL_AGENTS_PER_ORGANIZATION: { type: 'integer', minimum: 1, default: 10 },

  /** How long shutdown waits for in-flight requests before closing connections. */
  SHUTDOWN_TIMEOUT_MS: { type: 'integer', minimum: 0, default: 10_000 },

  /**
   * On SIGTERM, how long `/healthz` answers 503 while the instance still serves, so load balancers stop sending before
   * it stops listening. Default: 5 s on PostgreSQL (instances behind a load balancer), none on PGlite (one process).
   */
  SHUTDOWN_DRAIN_MS: { type: 'integer', minimum: 0, maximum: 300_000 },

  /** How long an agent's turn lasts without a sign of life before another agent may take the work. */
  AGENT_LEASE_MS: { type: 'integer', minimum: 1000, default: 300_000 },

  /**
   * How long an interrupted turn's agent has to stop and end its turn: past this the turn's lease
   * runs out (heartbeats no longer renew it) and the server ends the turn itself, `idle`.
   */
  AGENT_INTERRUPT_GRACE_MS: { type: 'integer', minimum: 100, default: 15_000 },

  /**
   * Each instance ends interrupted turns whose agent did not end them in time, and denies tool
   * approvals nobody answered before their timeout, when they fall due (it learns of them from the
   * events); and every this often in case it missed some (a restart).
   */
  TURN_SWEEP_MS: { type: 'integer', minimum: 50, default: 60_000 },

  /** How long a credential's lookup is reused (0: every request reads the database). */
  AUTH_CACHE_MS: { type: 'integer', minimum: 0, maximum: 60_000, default: 1_000 },

  LOG_LEVEL: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },

  /**
   * `pretty`: one readable line per event (coloured at a terminal; NO_COLOR and FORCE_COLOR are
   * honoured); `json`: one JSON object per line, for log collectors. Default: pretty when stdout is
   * a terminal, JSON otherwise.
   */
  LOG_FORMAT: { type: 'string', enum: ['pretty', 'json'] },

  /**
   * The bearer token Prometheus sends to read `/metrics`; unset, `/metrics` answers 404 (nothing is exposed). At least
   * 32 characters: it is compared in constant time, but only its length stands between a guesser and the metrics.
   */
  METRICS_TOKEN: { type: 'string', minLength: 32, 'x-secret': true, 'x-must-be': 'at least 32 characters' },

  /** Where the `local` provider prepares computers' workspaces (default: DATA_DIR/computers). */
  COMPUTERS_DIR: { type: 'string' },

  /**
   * The one directory whose git repositories (local paths and file:// URLs) computers may clone.
   * Unset by default: no user can make the server clone its own files.
   */
  LOCAL_REPOS_DIR: { type: 'string' },

  /**
   * Whether installing a managed computer's dependencies may run the packages' own scripts
   * (npm, pnpm, yarn, bun lifecycle scripts). Off by default: with them, anyone who may create a
   * managed computer can run code on the server's host.
   */
  LOCAL_INSTALL_SCRIPTS: { type: 'boolean', default: false },

  /**
   * Whether the server runs the reference agent of each active managed `local` computer (`on`, the
   * default) or leaves that to the operator (`off`). With several instances, one runs each agent.
   */
  LOCAL_AGENTS: { type: 'boolean', default: true, 'x-on-off': true },

  /**
   * Whether everything run for a managed `local` computer (clone, install, its agent, the agent's tools and hooks)
   * runs in that computer's bubblewrap sandbox (`on`, the default). `off` trusts every member who may create a
   * managed computer with the server's host: its files, its environment, its network.
   */
  LOCAL_SANDBOX: { type: 'boolean', default: true, 'x-on-off': true },

  /** Memory (data segment, MiB) each process of a sandboxed computer may use. */
  LOCAL_SANDBOX_MEMORY_MB: { type: 'integer', minimum: 64, default: 4096 },

  /** CPU time (seconds) each process of a sandboxed computer may use before the kernel stops it. */
  LOCAL_SANDBOX_CPU_SECONDS: { type: 'integer', minimum: 1, default: 3600 },

  /** Processes a sandboxed computer may run at once (enforced when the server runs as root: each computer has its own uid). */
  LOCAL_SANDBOX_PROCESSES: { type: 'integer', minimum: 8, default: 512 },

  /** Disk a computer's workspace may use (MiB): a run that takes it past this is stopped. */
  LOCAL_WORKSPACE_MAX_MB: { type: 'integer', minimum: 1, default: 10_240 },

  /** How often each instance looks for provisioning steps to run. */
  PROVISIONING_POLL_MS: { type: 'integer', minimum: 50, default: 1_000 },

  /** A running step's claim lasts this long without renewal; then another instance takes it over. */
  PROVISIONING_LEASE_MS: { type: 'integer', minimum: 500, default: 30_000 },

  /** A step still running after this long is stopped and fails. */
  PROVISIONING_STEP_TIMEOUT_MS: { type: 'integer', minimum: 1_000, default: 600_000 },

  /** Steps one instance runs at the same time (0: this instance provisions nothing). */
  PROVISIONING_CONCURRENCY: { type: 'integer', minimum: 0, maximum: 64, default: 2 },

  /**
   * Keys that encrypt secrets stored in the database (custom models' API keys): 32 bytes each,
   * base64 or hex, comma-separated; the first encrypts, all decrypt. Required with DATABASE_URL;
   * on the embedded database one is made in DATA_DIR/secrets.key.
   */
  SECRETS_KEY: { type: 'string', 'x-secret': true },

  /** How long an organization's enterprise controls are reused before being read again (0: every time). */
  CONTROLS_CACHE_MS: { type: 'integer', minimum: 0, maximum: 60_000, default: 1_000 },

  /** How often each instance deletes sessions older than their organization's `sessionRetentionDays`. */
  RETENTION_SWEEP_MS: { type: 'integer', minimum: 100, default: 3_600_000 },

  /** How long the event log keeps events: streams resume, and the audit log reaches back, this far. */
  EVENT_RETENTION_DAYS: { type: 'integer', minimum: 1, maximum: 3650, default: 30 },

  /**
   * How often each instance looks for events a durable listener has not handled yet (a crash
   * between commit and dispatch, a lost notification, a listener's retry). New events are handled at once.
   */
  EVENT_LISTENER_SWEEP_MS: { type: 'integer', minimum: 50, default: 5_000 },

  /** How often an open event stream sends a heartbeat comment, so proxies and clients know it is alive. */
  EVENT_STREAM_HEARTBEAT_MS: { type: 'integer', minimum: 100, maximum: 300_000, default: 15_000 },

  /** Event streams (server-sent events) one credential may hold open at once on an instance; more answer 429. */
  EVENT_STREAMS_PER_CREDENTIAL: { type: 'integer', minimum: 1, default: 10 },

  /** Event streams one organization may hold open at once on an instance; more answer 429. */
  EVENT_STREAMS_PER_ORGANIZATION: { type: 'integer', minimum: 1, default: 200 },

  /** How often each instance rolls up analytics facts of closed days (it also runs at start-up). */
  ANALYTICS_ROLLUP_MS: { type: 'integer', minimum: 100, default: 600_000 },

  /**
   * Hosts the server may reach on a user's behalf from a computer's sandbox (its proxy; later webhooks)
   * although their addresses are not public: loopback, private, link-local, cloud metadata ...
   * Comma-separated host names or IP addresses (IPv6 in brackets), each optionally with `:port` to allow
   * that port only; matched exactly (letter case and a trailing dot aside), never by suffix or by the
   * address a name resolves to. Unset: none, every such address is refused.
   */
  OUTBOUND_ALLOWED_HOSTS: { type: 'string', pattern: HOST_LIST, 'x-must-be': HOST_LIST_MUST_BE },

  /**
   * Hosts the model relay may reach although their addresses are not public: self-hosted models on a
   * private network or on this machine. The same form and matching as OUTBOUND_ALLOWED_HOSTS, and a list
   * of its own, so allowing a model server does not open it to every sandbox. Unset: none.
   */
  MODEL_RELAY_ALLOWED_HOSTS: { type: 'string', pattern: HOST_LIST, 'x-must-be': HOST_LIST_MUST_BE },

  /**
   * Hosts the MCP relay may reach although their addresses are not public: MCP servers on a private
   * network or on this machine. The same form and matching as OUTBOUND_ALLOWED_HOSTS, a list of its own.
   * The MCP relay shares MODEL_RELAY_TIMEOUT_MS, MODEL_RELAY_MAX_RESPONSE_BYTES and the per-computer
   * MODEL_RELAY_CONCURRENCY_PER_COMPUTER with the model relay. Unset: none.
   */
  MCP_RELAY_ALLOWED_HOSTS: { type: 'string', pattern: HOST_LIST, 'x-must-be': HOST_LIST_MUST_BE },

  /** How long one relayed chat completion may take, streamed or not (models can think for minutes). */
  MODEL_RELAY_TIMEOUT_MS: { type: 'integer', minimum: 100, default: 600_000 },

  /** The most a model's answer may hold (a JSON body, or a whole stream) before the relay gives up on it. */
  MODEL_RELAY_MAX_RESPONSE_BYTES: { type: 'integer', minimum: 1024, default: 16 * MiB },

  /** Relayed model calls one computer may have in progress at once on an instance (429 `too_many_relays` past it). */
  MODEL_RELAY_CONCURRENCY_PER_COMPUTER: { type: 'integer', minimum: 1, default: 8 },

  /**
   * Hosts webhooks may reach although their addresses are not public (a receiver on a private network
   * or on this machine), and the only hosts a webhook URL may name with http rather than https. The same
   * form and matching as OUTBOUND_ALLOWED_HOSTS, a list of its own. Unset: public https URLs only.
   */
  WEBHOOK_ALLOWED_HOSTS: { type: 'string', pattern: HOST_LIST, 'x-must-be': HOST_LIST_MUST_BE },

  /** How long a webhook receiver has to answer one delivery attempt (then the attempt failed and is retried). */
  WEBHOOK_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 120_000, default: 15_000 },

  /**
   * How long past WEBHOOK_TIMEOUT_MS a claimed delivery stays the claiming instance's (time to record
   * the attempt); an instance that dies mid-attempt leaves its deliveries to the others after that.
   */
  WEBHOOK_LEASE_MARGIN_MS: { type: 'integer', minimum: 100, maximum: 600_000, default: 30_000 },

  /**
   * The waits before each retry of a failed delivery, comma-separated milliseconds (each with ±20% jitter);
   * after the last retry fails the delivery is failed. The default (`AppConfig.webhookRetrySchedule`) retries 7 times
   * over about 27 hours: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
   */
  WEBHOOK_RETRY_SCHEDULE_MS: {
    type: 'string',
    pattern: String.raw`^\d{1,10}(,\d{1,10}){0,19}$`,
    'x-must-be': '1 to 20 comma-separated whole numbers of milliseconds',
  },

  /** A webhook whose deliveries have failed without a single success for this long is disabled (`webhook.disabled`). */
  WEBHOOK_DISABLE_AFTER_MS: { type: 'integer', minimum: 1_000, default: 3 * 86_400_000 },

  /**
   * How often each instance looks for deliveries due, at the most: new ones are sent at once by the
   * instance that queued them, and an instance sleeps until the next retry due.
   */
  WEBHOOK_POLL_MS: { type: 'integer', minimum: 50, default: 30_000 },

  /** Delivery attempts one instance makes at once (0: this instance sends none). */
  WEBHOOK_CONCURRENCY: { type: 'integer', minimum: 0, maximum: 256, default: 8 },
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;

type Schemas = typeof SETTINGS;
type ValueOf<S> = S extends { enum: readonly (infer E)[] } ? E : S extends { type: 'integer' } ? number : S extends { type: 'boolean' } ? boolean : string;

/**
 * The settings' values as TypeScript sees them: one field per setting, optional when it has no default. Mapped over
 * `keyof` the schemas, so each field keeps its setting's comment (an editor shows it on `config.PORT`).
 */
export type Settings = { -readonly [K in keyof Schemas as Schemas[K] extends { default: unknown } ? K : never]: ValueOf<Schemas[K]> } & {
  -readonly [K in keyof Schemas as Schemas[K] extends { default: unknown } ? never : K]?: ValueOf<Schemas[K]>;
};

/** The settings in the order they are listed and described. */
export const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[];

const TRUE = ['true', '1'];
const FALSE = ['false', '0'];

/**
 * An environment variable's text as its setting's value, still to be validated; undefined when unset. Empty text
 * is unset only where the setting has no default: elsewhere it is the value `''`, which an integer or a boolean
 * refuses, so an empty PORT stops the server rather than quietly meaning 3000. An integer is what `Number()` makes
 * of the text (so `1e3` is 1000); a boolean is true/false or 1/0, and also on/off where `x-on-off` says so.
 */
export function readSetting(setting: Setting, text: string | undefined): unknown {
  if (text === undefined || (text === '' && setting.default === undefined)) return undefined;
  switch (setting.type) {
    case 'integer':
      return text === '' ? text : Number(text);
    case 'boolean': {
      const yes = setting['x-on-off'] ? ['on', ...TRUE] : TRUE;
      const no = setting['x-on-off'] ? ['off', ...FALSE] : FALSE;
      return yes.includes(text) ? true : no.includes(text) ? false : text;
    }
    case 'string':
      return text;
  }
}

/** What a setting's value must be, as the message for a value that is not says it. */
export function mustBe(setting: Setting): string {
  if (setting['x-must-be']) return setting['x-must-be'];
  if (setting.enum) return `one of: ${setting.enum.join(', ')}`;
  if (setting.format === 'server-url') return 'an http, https or ftp URL with a host (e.g. https://agents.example.com)';
  if (setting.type === 'boolean') return setting['x-on-off'] ? 'on or off' : 'true or false';
  if (setting.type === 'integer') {
    const { minimum, maximum } = setting;
    if (minimum !== undefined && maximum !== undefined) return `a whole number from ${minimum} to ${maximum}`;
    if (minimum !== undefined) return `a whole number, at least ${minimum}`;
    return 'a whole number';
  }
  if (setting.pattern !== undefined || setting.minLength !== undefined)
    throw new Error(`A setting with a pattern or a minLength says what it must be ('x-must-be')`);
  return 'text';
}

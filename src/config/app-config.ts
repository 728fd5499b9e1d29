import Ajv from 'ajv';
import { resolve } from 'node:path';
import { isServerUrl } from './server-url';
import { readSetting, Setting, SETTING_KEYWORDS, SETTING_NAMES, Settings, SETTINGS, mustBe } from './settings';

export { DEFAULT_MESSAGE_BODY_LIMIT_BYTES } from './settings';

/** A class cannot declare its fields from a type: this base class stands for them, typed as the settings, and copies their values in. */
function withSettings(): new (settings: Settings) => Settings {
  return class {
    constructor(settings: Settings) {
      Object.assign(this, settings);
    }
  } as new (settings: Settings) => Settings;
}

/**
 * Every setting the server reads from its environment (one field per setting of `SETTINGS`, which says what
 * each accepts and means), validated once at boot. Secrets are never logged (see `describe()`).
 */
export class AppConfig extends withSettings() {
  static readonly secrets: ReadonlyArray<keyof AppConfig> = SETTING_NAMES.filter((name) => (SETTINGS[name] as Setting)['x-secret']);

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

  /** MCP_RELAY_ALLOWED_HOSTS as a list (empty when unset). */
  get mcpRelayAllowedHosts(): string[] {
    return hostList(this.MCP_RELAY_ALLOWED_HOSTS);
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

  /** SHUTDOWN_DRAIN_MS, or 5 s where instances stand behind a load balancer (PostgreSQL) and none on PGlite. */
  get shutdownDrainMs(): number {
    return this.SHUTDOWN_DRAIN_MS ?? (this.engine === 'postgres' ? 5_000 : 0);
  }

  /** The settings as they may be logged: secrets masked. */
  describe(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const key of SETTING_NAMES) {
      const value = this[key];
      out[key] = AppConfig.secrets.includes(key) && value ? '***' : value;
    }
    return out;
  }
}

export class ConfigError extends Error {}

function hostList(value: string | undefined): string[] {
  return value === undefined ? [] : value.split(',').map((entry) => entry.trim());
}

// Each setting left unset takes its schema default, which is then validated like a value (a bad default stops every boot).
const ajv = new Ajv({ allErrors: true, strict: true, coerceTypes: false, useDefaults: true });
ajv.addVocabulary(SETTING_KEYWORDS);
ajv.addFormat('server-url', isServerUrl);
const validate = ajv.compile<Settings>({ type: 'object', additionalProperties: false, properties: SETTINGS });

/** Reads and validates the configuration; throws a ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const values: Record<string, unknown> = {};
  for (const name of SETTING_NAMES) {
    const value = readSetting(SETTINGS[name], env[name]);
    if (value !== undefined) values[name] = value;
  }
  if (!validate(values)) {
    const bad = new Set((validate.errors ?? []).map((error) => error.instancePath.slice(1)));
    const lines = SETTING_NAMES.filter((name) => bad.has(name)).map((name) => `${name}: ${name} must be ${mustBe(SETTINGS[name])}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return new AppConfig(values);
}

import { AppConfig, ConfigError, loadConfig } from './app-config';
import { mustBe, Setting, SETTING_NAMES, SettingName, SETTINGS } from './settings';

/** The ConfigError's message for an environment loadConfig must refuse. */
function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

const setting = (name: SettingName): Setting => SETTINGS[name];
const named = (predicate: (setting: Setting) => boolean) => SETTING_NAMES.filter((name) => predicate(setting(name)));

describe('LOCAL_AGENTS', () => {
  it('is on unless switched off', () => {
    expect(loadConfig({}).LOCAL_AGENTS).toBe(true);
    for (const on of ['on', 'true', '1']) expect(loadConfig({ LOCAL_AGENTS: on }).LOCAL_AGENTS).toBe(true);
    for (const off of ['off', 'false', '0']) expect(loadConfig({ LOCAL_AGENTS: off }).LOCAL_AGENTS).toBe(false);
  });

  it('refuses anything else, naming the variable', () => {
    expect(() => loadConfig({ LOCAL_AGENTS: 'sometimes' })).toThrow(ConfigError);
    expect(() => loadConfig({ LOCAL_AGENTS: 'sometimes' })).toThrow(/LOCAL_AGENTS: LOCAL_AGENTS must be on or off/);
  });
});

describe('loadConfig', () => {
  it("gives every setting the schema's default, or none, when the environment is empty", () => {
    const config = loadConfig({}) as unknown as Record<string, unknown>;
    for (const name of SETTING_NAMES) expect([name, config[name]]).toEqual([name, setting(name).default]);
  });

  it('names every bad variable at once, a line each, in the order the settings are listed', () => {
    expect(refusal({ LOG_LEVEL: 'loud', PORT: 'x', JWT_SECRET: 'too short', UNRELATED: 'x' })).toBe(
      [
        'Invalid configuration:',
        '  PORT: PORT must be a whole number from 0 to 65535',
        '  JWT_SECRET: JWT_SECRET must be at least 32 characters',
        '  LOG_LEVEL: LOG_LEVEL must be one of: fatal, error, warn, info, debug, trace, silent',
      ].join('\n'),
    );
  });

  it('reads only its settings from the environment', () => {
    const config = loadConfig({ PATH: '/usr/bin', LOCAL_AGENTS: 'off' }) as unknown as Record<string, unknown>;
    expect(config.PATH).toBeUndefined();
    expect(config.LOCAL_AGENTS).toBe(false);
  });

  it('says, for every setting, what a bad value must be', () => {
    for (const name of SETTING_NAMES) expect([name, mustBe(setting(name))]).toEqual([name, expect.stringMatching(/^\S/)]);
  });
});

describe('an empty variable', () => {
  it('leaves a setting without a default unset', () => {
    const config = loadConfig({ BASE_URL: '', DATABASE_IDLE_TIMEOUT_MS: '', LOG_FORMAT: '', OUTBOUND_ALLOWED_HOSTS: '', JWT_SECRET: '' });
    expect([config.BASE_URL, config.DATABASE_IDLE_TIMEOUT_MS, config.LOG_FORMAT, config.OUTBOUND_ALLOWED_HOSTS, config.JWT_SECRET]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it.each(named((s) => s.default !== undefined && s.type !== 'string'))('is refused for %s rather than quietly meaning its default', (name) => {
    expect(refusal({ [name]: '' })).toBe(`Invalid configuration:\n  ${name}: ${name} must be ${mustBe(setting(name))}`);
  });

  it('is the value of HOST and DATA_DIR, and refused for LOG_LEVEL', () => {
    expect(loadConfig({ HOST: '', DATA_DIR: '' })).toMatchObject({ HOST: '', DATA_DIR: '' });
    expect(refusal({ LOG_LEVEL: '' })).toMatch(/LOG_LEVEL: LOG_LEVEL must be one of: fatal, error/);
  });
});

describe('integer settings', () => {
  it.each(named((s) => s.type === 'integer'))('%s takes whole numbers within its range and refuses others', (name) => {
    const { minimum, maximum } = setting(name);
    const line = `${name}: ${name} must be ${mustBe(setting(name))}`;
    expect(line).toMatch(/must be a whole number/);
    for (const fine of [minimum, maximum].filter((n) => n !== undefined)) expect(loadConfig({ [name]: String(fine) })[name]).toBe(fine);
    const wrong = [
      'abc',
      String((minimum ?? 0) + 0.5),
      ...(minimum === undefined ? [] : [String(minimum - 1)]),
      ...(maximum === undefined ? [] : [String(maximum + 1)]),
    ];
    for (const value of wrong) expect([value, refusal({ [name]: value })]).toEqual([value, `Invalid configuration:\n  ${line}`]);
  });
});

describe('boolean settings', () => {
  it('LOCAL_INSTALL_SCRIPTS is off unless set to true or 1, and refuses on/off and anything else', () => {
    expect(loadConfig({}).LOCAL_INSTALL_SCRIPTS).toBe(false);
    for (const on of ['true', '1']) expect(loadConfig({ LOCAL_INSTALL_SCRIPTS: on }).LOCAL_INSTALL_SCRIPTS).toBe(true);
    for (const off of ['false', '0']) expect(loadConfig({ LOCAL_INSTALL_SCRIPTS: off }).LOCAL_INSTALL_SCRIPTS).toBe(false);
    for (const value of ['on', 'off', 'TRUE', 'yes']) {
      expect(refusal({ LOCAL_INSTALL_SCRIPTS: value })).toMatch(/LOCAL_INSTALL_SCRIPTS: LOCAL_INSTALL_SCRIPTS must be true or false$/);
    }
  });

  it('LOCAL_SANDBOX is on unless switched off, and refuses anything else', () => {
    expect(loadConfig({}).LOCAL_SANDBOX).toBe(true);
    for (const off of ['off', 'false', '0']) expect(loadConfig({ LOCAL_SANDBOX: off }).LOCAL_SANDBOX).toBe(false);
    expect(refusal({ LOCAL_SANDBOX: 'OFF' })).toMatch(/LOCAL_SANDBOX: LOCAL_SANDBOX must be on or off$/);
  });
});

describe('text settings', () => {
  it('JWT_SECRET takes 32 characters or more', () => {
    expect(loadConfig({ JWT_SECRET: 'x'.repeat(32) }).JWT_SECRET).toBe('x'.repeat(32));
    expect(refusal({ JWT_SECRET: 'x'.repeat(31) })).toMatch(/JWT_SECRET: JWT_SECRET must be at least 32 characters$/);
  });

  it('LOG_LEVEL and LOG_FORMAT take one of their values', () => {
    expect(loadConfig({ LOG_LEVEL: 'trace', LOG_FORMAT: 'json' })).toMatchObject({ LOG_LEVEL: 'trace', LOG_FORMAT: 'json' });
    expect(refusal({ LOG_FORMAT: 'JSON' })).toMatch(/LOG_FORMAT: LOG_FORMAT must be one of: pretty, json$/);
  });

  it.each(['BASE_URL', 'APP_URL', 'JWT_JWKS_URL'])('%s takes an http, https or ftp URL with a host', (name) => {
    expect(loadConfig({ [name]: 'http://localhost:3000/' })[name as SettingName]).toBe('http://localhost:3000/');
    for (const value of ['localhost:3000', 'file:///srv', 'http://my_host']) {
      expect(refusal({ [name]: value })).toMatch(new RegExp(`${name}: ${name} must be an http, https or ftp URL with a host`));
    }
  });

  it('TRUST_PROXY takes true, a hop count, or addresses and CIDR ranges', () => {
    for (const value of ['true', '2', '10.0.0.0/8, 192.168.1.1', '::1']) expect(loadConfig({ TRUST_PROXY: value }).TRUST_PROXY).toBe(value);
    for (const value of ['yes', '10.0.0.1 10.0.0.2', 'proxy.internal'])
      expect(refusal({ TRUST_PROXY: value })).toMatch(/TRUST_PROXY: TRUST_PROXY must be true, a hop count/);
  });

  it('WEBHOOK_RETRY_SCHEDULE_MS takes 1 to 20 comma-separated whole numbers', () => {
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE_MS: '1000,60000' }).webhookRetrySchedule).toEqual([1000, 60000]);
    expect(loadConfig({}).webhookRetrySchedule).toHaveLength(7);
    for (const value of ['1000, 60000', '1.5', Array(21).fill('1').join(',')]) {
      expect(refusal({ WEBHOOK_RETRY_SCHEDULE_MS: value })).toMatch(/WEBHOOK_RETRY_SCHEDULE_MS: WEBHOOK_RETRY_SCHEDULE_MS must be 1 to 20/);
    }
  });
});

describe('describe()', () => {
  it('lists every setting, secrets masked', () => {
    const config = loadConfig({ JWT_SECRET: 's'.repeat(40), DATABASE_URL: 'postgres://u:pw@db/x', SECRETS_KEY: 'k', PORT: '8080' });
    const described = config.describe();
    expect(Object.keys(described)).toEqual(SETTING_NAMES);
    expect(described).toMatchObject({ JWT_SECRET: '***', DATABASE_URL: '***', SECRETS_KEY: '***', PORT: 8080 });
    expect(JSON.stringify(described)).not.toMatch(/sss|pw@|"k"/);
    expect([...AppConfig.secrets].sort()).toEqual(['DATABASE_URL', 'JWT_SECRET', 'METRICS_TOKEN', 'SECRETS_KEY']);
  });

  it('leaves unset secrets unset', () => {
    expect(loadConfig({}).describe()).toMatchObject({ JWT_SECRET: undefined, DATABASE_URL: undefined, SECRETS_KEY: undefined });
  });
});

import { ConfigError, loadConfig } from './app-config';

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

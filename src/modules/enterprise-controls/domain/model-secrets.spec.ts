import { extraHeaderProblems, maskModel, restoreMaskedSecrets, secretsOf } from './model-secrets';
import { CustomModel } from './settings';

const KEY = 'sk-live-abcdefghij-1234';
const HEADER = 'hdr-secret-value-5678';
const stored = (): CustomModel => ({
  id: 'team',
  model: 'm',
  baseUrl: 'https://llm.example.com/v1',
  apiKey: KEY,
  extraHeaders: { 'X-Vendor-Key': HEADER },
  cloudModelConfig: { cloudRegion: 'eu', cloudAuthRefresh: 'refresh-token-abcdef' },
});

describe('restoreMaskedSecrets', () => {
  it('puts the stored secrets back for masked values of the same model at the same origin', () => {
    const after = [{ ...maskModel(stored()), baseUrl: 'https://llm.example.com/v2', displayName: 'renamed' }];
    expect(restoreMaskedSecrets(after, [stored()])).toEqual([]);
    expect(secretsOf(after[0])).toEqual(secretsOf(stored()));
  });

  it('refuses every masked secret when the model now sends to another origin', () => {
    const after = [{ ...maskModel(stored()), baseUrl: 'https://attacker.example.net/v1' }];
    const problems = restoreMaskedSecrets(after, [stored()]);
    expect(problems.map((problem) => problem.field)).toEqual([
      'settings.customModels[0].apiKey',
      'settings.customModels[0].extraHeaders.X-Vendor-Key',
      'settings.customModels[0].cloudModelConfig.cloudAuthRefresh',
    ]);
    expect(problems[0].message).toMatch(/attacker\.example\.net.*stays with the address/);
    expect(JSON.stringify(after)).not.toContain(KEY);
  });

  it('counts a port or scheme change as a move, and a cloudBaseUrl change too', () => {
    for (const change of [
      { baseUrl: 'https://llm.example.com:8443/v1' },
      { baseUrl: 'http://llm.example.com/v1' },
      { cloudModelConfig: { ...maskModel(stored()).cloudModelConfig, cloudBaseUrl: 'https://x.example' } },
    ]) {
      const after = [{ ...maskModel(stored()), ...change }];
      expect(restoreMaskedSecrets(after, [stored()]).length).toBeGreaterThan(0);
    }
  });

  it('refuses a move that drops the key without saying so, and accepts a new key in full', () => {
    const { apiKey: _dropped, ...rest } = maskModel(stored());
    void _dropped;
    const moved = { ...rest, extraHeaders: {}, cloudModelConfig: {}, baseUrl: 'https://elsewhere.example' };
    expect(restoreMaskedSecrets([moved], [stored()]).map((problem) => problem.field)).toEqual(['settings.customModels[0].apiKey']);
    expect(restoreMaskedSecrets([{ ...moved, apiKey: 'sk-new-origin-key-0000' }], [stored()])).toEqual([]);
  });

  it('refuses a masked value for a model or header that has none stored, and a mask of another value', () => {
    const foreign = [{ ...maskModel(stored()), id: 'other' }];
    expect(restoreMaskedSecrets(foreign, [stored()])).toHaveLength(3);
    const wrongMask = [{ ...stored(), apiKey: '****9999' }];
    expect(restoreMaskedSecrets(wrongMask, [stored()])[0].message).toMatch(/not the stored value's mask/);
  });
});

describe('extraHeaderProblems', () => {
  it('refuses headers that steer the request or that the relay sets', () => {
    const headers = {
      Host: 'x',
      Cookie: 'a=b',
      'X-Forwarded-For': '1.2.3.4',
      'Transfer-Encoding': 'chunked',
      'Proxy-Authorization': 'x',
      Connection: 'close',
      Authorization: 'Bearer x',
      'x-ok': 'y',
      'X-OK': 'z',
    };
    const problems = extraHeaderProblems([{ ...stored(), extraHeaders: headers }]);
    expect(problems.map((problem) => problem.field.split('.').pop())).toEqual([
      'Host',
      'Cookie',
      'X-Forwarded-For',
      'Transfer-Encoding',
      'Proxy-Authorization',
      'Connection',
      'Authorization',
      'X-OK',
    ]);
  });

  it('lets Authorization through when the model has no apiKey', () => {
    expect(extraHeaderProblems([{ id: 'a', model: 'm', baseUrl: 'https://x.example', extraHeaders: { Authorization: 'Bearer t' } }])).toEqual([]);
  });
});

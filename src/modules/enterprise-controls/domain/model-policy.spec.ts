import { checkModel, effectiveModelPolicy, fastRequestRefusal, underBase } from './model-policy';
import { defaultSettings, EnterpriseSettings } from './settings';

const USER = '0190a000-0000-7000-8000-000000000001';

function settings(change: (s: EnterpriseSettings) => void): EnterpriseSettings {
  const s = defaultSettings();
  s.customModels = [{ id: 'custom:llama', model: 'llama-3', baseUrl: 'https://llm.example.com/v1' }];
  change(s);
  return s;
}

describe('checkModel', () => {
  it('allows every model under the defaults', () => {
    expect(
      checkModel(
        settings(() => undefined),
        USER,
        'any-model',
      ),
    ).toBeNull();
    expect(
      checkModel(
        settings(() => undefined),
        USER,
        'custom:llama',
      ),
    ).toBeNull();
  });

  it('refuses a blocked model, custom or not, naming the rule', () => {
    const s = settings((x) => (x.modelPolicy.blockedModelIds = ['gpt-x', 'custom:llama']));
    expect(checkModel(s, USER, 'gpt-x')?.rule).toBe('modelPolicy.blockedModelIds');
    expect(checkModel(s, USER, 'custom:llama')?.rule).toBe('modelPolicy.blockedModelIds');
  });

  it('limits service models to the allowed ones when allowAllServiceModels is off', () => {
    const s = settings((x) => Object.assign(x.modelPolicy, { allowAllServiceModels: false, allowedModelIds: ['model-a'] }));
    expect(checkModel(s, USER, 'model-a')).toBeNull();
    expect(checkModel(s, USER, 'model-b')?.rule).toBe('modelPolicy.allowedModelIds');
    expect(checkModel(s, USER, 'custom:llama')).toBeNull();
  });

  it('keeps fast models out while isFastModelsAllowed is off: by the vendor name, or by extraArgs asking for fast processing', () => {
    const s = settings((x) => {
      x.customModels.push(
        { id: 'quick', model: 'claude-opus-4.8-fast', baseUrl: 'https://llm.example.com/v1' },
        { id: 'priority', model: 'gpt-5', baseUrl: 'https://llm.example.com/v1', extraArgs: { service_tier: 'priority' } },
        { id: 'speedy', model: 'claude-opus-5', baseUrl: 'https://llm.example.com/v1', extraArgs: { speed: 'fast' } },
        // Only the vendor's name and arguments count: an id that says "fast" names nothing fast.
        { id: 'fast-lane', model: 'llama-3', baseUrl: 'https://llm.example.com/v1' },
      );
    });
    const fastOnes = ['quick', 'priority', 'speedy', 'grok-code-fast-1', 'vendor/model:fast'];
    for (const model of [...fastOnes, 'fast-lane', 'breakfast-7b', 'custom:llama']) expect(checkModel(s, USER, model)).toBeNull();
    s.modelPolicy.isFastModelsAllowed = false;
    for (const model of fastOnes) expect(checkModel(s, USER, model)?.rule).toBe('modelPolicy.isFastModelsAllowed');
    expect(checkModel(s, USER, 'speedy')?.detail).toBe(
      'Model "speedy" is a fast model (its extraArgs ask for speed "fast"), and your organization\'s model policy does not allow fast models (modelPolicy.isFastModelsAllowed).',
    );
    for (const model of ['fast-lane', 'breakfast-7b', 'custom:llama', 'claude-opus-5']) expect(checkModel(s, USER, model)).toBeNull();
    // A request may ask for fast processing of any model: the relay refuses that too.
    expect(fastRequestRefusal(s, USER, { speed: 'fast' })?.rule).toBe('modelPolicy.isFastModelsAllowed');
    expect(fastRequestRefusal(s, USER, { service_tier: 'fast' })?.detail).toMatch(/^The request asks for fast processing \(service_tier "fast"\)/);
    expect(fastRequestRefusal(s, USER, { service_tier: 'default', speed: 'standard' })).toBeNull();
    // A user's own policy may allow them.
    s.userModelPolicies[USER] = { isFastModelsAllowed: true };
    expect(checkModel(s, USER, 'quick')).toBeNull();
    expect(fastRequestRefusal(s, USER, { speed: 'fast' })).toBeNull();
  });

  it('needs explicit opt-in for listed models even when all service models are allowed', () => {
    const s = settings((x) => (x.modelPolicy.requireExplicitOptInModelIds = ['big-model']));
    expect(checkModel(s, USER, 'big-model')?.rule).toBe('modelPolicy.requireExplicitOptInModelIds');
    s.modelPolicy.allowedModelIds = ['big-model'];
    expect(checkModel(s, USER, 'big-model')).toBeNull();
  });

  it('gates custom models on allowCustomModels and allowedBaseUrls', () => {
    expect(
      checkModel(
        settings((x) => (x.modelPolicy.allowCustomModels = false)),
        USER,
        'custom:llama',
      )?.rule,
    ).toBe('modelPolicy.allowCustomModels');
    expect(
      checkModel(
        settings((x) => (x.modelPolicy.allowedBaseUrls = ['https://llm.example.co'])),
        USER,
        'custom:llama',
      )?.rule,
    ).toBe('modelPolicy.allowedBaseUrls');
    expect(
      checkModel(
        settings((x) => (x.modelPolicy.allowedBaseUrls = ['https://llm.example.com/'])),
        USER,
        'custom:llama',
      ),
    ).toBeNull();
  });

  it('compares base URLs as parsed URLs: scheme, host and port equal, path by whole segments', () => {
    const base = 'https://llm.example.com/v1';
    for (const url of ['https://llm.example.com/v1', 'https://llm.example.com/v1/', 'https://llm.example.com/v1/chat', 'HTTPS://LLM.example.com:443/v1/x']) {
      expect(underBase(url, base)).toBe(true);
    }
    for (const url of [
      'https://llm.example.com/v10',
      'https://llm.example.com/v1/../admin',
      'https://llm.example.com/v1%2F..%2Fadmin',
      'http://llm.example.com/v1',
      'https://llm.example.com:8443/v1',
      'https://llm.example.com.evil.example/v1',
      'https://llm.example.com@evil.example/v1',
      'https://evil.example/?https://llm.example.com/v1',
      'not a url',
    ]) {
      expect(underBase(url, base)).toBe(false);
    }
    expect(underBase('https://llm.example.com/anything', 'https://llm.example.com/')).toBe(true);
    expect(underBase('https://llm.example.com/v1', 'https://llm.example.com/v1?x')).toBe(false);
  });

  it("lays a user's policy over the organization's", () => {
    const s = settings((x) => {
      x.modelPolicy.blockedModelIds = ['model-b'];
      x.userModelPolicies = { [USER]: { blockedModelIds: [] } };
    });
    expect(checkModel(s, USER, 'model-b')).toBeNull();
    expect(checkModel(s, '0190a000-0000-7000-8000-000000000002', 'model-b')?.rule).toBe('modelPolicy.blockedModelIds');
    expect(effectiveModelPolicy(s, USER).allowAllServiceModels).toBe(true);
  });
});

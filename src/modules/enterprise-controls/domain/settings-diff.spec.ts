import { diffSettings, maskSettings } from './settings-diff';
import { defaultSettings, EnterpriseSettings } from './settings';

const KEY = 'sk-live-abcdefghij-1234';
const model = (apiKey = KEY) => ({ id: 'custom:a', model: 'a', baseUrl: 'https://llm.example.com', apiKey });

function withModels(...models: ReturnType<typeof model>[]): EnterpriseSettings {
  return { ...defaultSettings(), customModels: models };
}

describe('diffSettings', () => {
  it('is empty between equal settings', () => {
    expect(diffSettings(defaultSettings(), defaultSettings())).toEqual([]);
  });

  it('names changed fields by JSON Pointer', () => {
    const after = defaultSettings();
    after.sandbox.network.httpProxyPort = 8080;
    after.restrictMemberVisibility = true;
    after.sessionRetentionDays = 30;
    expect(diffSettings(defaultSettings(), after)).toEqual(
      expect.arrayContaining([
        { op: 'add', path: '/sandbox/network/httpProxyPort', value: 8080 },
        { op: 'replace', path: '/restrictMemberVisibility', value: true },
        { op: 'add', path: '/sessionRetentionDays', value: 30 },
      ]),
    );
    expect(diffSettings(after, defaultSettings())).toContainEqual({ op: 'remove', path: '/sessionRetentionDays' });
  });

  it('masks keys in added models', () => {
    const diff = diffSettings(defaultSettings(), withModels(model()));
    expect(JSON.stringify(diff)).not.toContain('abcdefghij');
    expect(JSON.stringify(diff)).toContain('****1234');
  });

  it('shows a replaced key even when its mask is unchanged, masked', () => {
    const diff = diffSettings(withModels(model()), withModels(model('sk-other-zzzzzzzzz-1234')));
    expect(diff).toEqual([{ op: 'replace', path: '/customModels/0/apiKey', value: '****1234' }]);
  });
});

describe('maskSettings', () => {
  it('masks every key and leaves models without one alone', () => {
    const settings = withModels(model(), { id: 'custom:b', model: 'b', baseUrl: 'http://localhost:11434' } as ReturnType<typeof model>);
    const masked = maskSettings(settings);
    expect(masked.customModels.map((m) => m.apiKey)).toEqual(['****1234', undefined]);
    expect(settings.customModels[0].apiKey).toBe(KEY);
  });
});

describe('secrets beyond the key', () => {
  const HEADER = 'hdr-secret-value-5678';
  const CLOUD = 'export TOKEN=cloud-secret-9999';
  const rich = (header = HEADER) => ({
    ...model(),
    extraHeaders: { 'X-Vendor-Key': header },
    cloudModelConfig: { cloudRegion: 'eu-west-1', cloudCredentialExport: CLOUD },
  });

  it('masks extraHeaders values and cloud credentials in every diff shape, and leaves plain fields readable', () => {
    const diffs = [
      diffSettings(defaultSettings(), withModels(rich())),
      diffSettings(withModels(model()), withModels(rich())),
      diffSettings(withModels(rich()), withModels(rich('hdr-other-value-0000'))),
    ];
    for (const diff of diffs) {
      const text = JSON.stringify(diff);
      expect(text).not.toContain('secret-value');
      expect(text).not.toContain('hdr-other');
      expect(text).not.toContain('cloud-secret');
    }
    expect(JSON.stringify(diffs[1])).toContain('eu-west-1');
    expect(diffs[2]).toEqual([{ op: 'replace', path: '/customModels/0/extraHeaders/X-Vendor-Key', value: '****0000' }]);
  });

  it('maskSettings masks them too', () => {
    const masked = maskSettings(withModels(rich())).customModels[0];
    expect(masked.extraHeaders).toEqual({ 'X-Vendor-Key': '****5678' });
    expect(masked.cloudModelConfig).toEqual({ cloudRegion: 'eu-west-1', cloudCredentialExport: '****9999' });
  });
});

import { mcpServerProblems, mcpSecretsOf, restoreMaskedMcpSecrets } from './mcp-servers';
import { maskSecret } from './secret-mask';
import { defaultSettings, EnterpriseSettings, McpServer } from './settings';
import { diffSettings, maskSettings } from './settings-diff';
import { mapSettingsSecrets, SECRET_POINTERS } from './settings-secrets';

const HEADER = 'Bearer ghp_header-secret-1234';
const ENV = 'env-secret-value-5678';
const KEY = 'sk-model-key-abcdef-9012';
const http = (extra: Partial<McpServer> = {}): McpServer =>
  ({
    name: 'github',
    transport: 'http',
    url: 'https://mcp.example.com/mcp',
    headers: { Authorization: HEADER },
    ...extra,
  }) as McpServer;
const stdio = (extra: Partial<McpServer> = {}): McpServer =>
  ({
    name: 'local',
    transport: 'stdio',
    command: 'npx',
    args: ['-y', '@acme/mcp'],
    env: { TOKEN: ENV },
    ...extra,
  }) as McpServer;
const settings = (): EnterpriseSettings => ({
  ...defaultSettings(),
  customModels: [{ id: 'm', model: 'x', baseUrl: 'https://llm.example.com/v1', apiKey: KEY }],
  mcpServers: [http(), stdio()],
});

describe('The walk over the settings’ secrets', () => {
  it('finds every secret of custom models and MCP servers, and nothing else', () => {
    const found: string[] = [];
    mapSettingsSecrets(settings(), (value, location) => (found.push(`${location.join('/')}=${value}`), value));
    expect(found).toEqual([`customModels/0/apiKey=${KEY}`, `mcpServers/0/headers/Authorization=${HEADER}`, `mcpServers/1/env/TOKEN=${ENV}`]);
    expect(SECRET_POINTERS.filter((pointer) => pointer[0] === 'mcpServers')).toHaveLength(2);
  });

  it('masks them in answers and in a diff, whatever depth the diff changes them at', () => {
    const masked = JSON.stringify(maskSettings(settings()));
    for (const secret of [KEY, HEADER, ENV]) {
      expect(masked).not.toContain(secret);
      expect(masked).toContain(maskSecret(secret));
    }
    const before = settings();
    const cases: Array<(s: EnterpriseSettings) => void> = [
      (s) => (s.mcpServers![0] = http({ headers: { Authorization: 'Bearer another-secret-0000' } })),
      (s) => (s.mcpServers![1] = stdio({ env: { TOKEN: 'another-env-secret-1111', OTHER: 'plain-looking-2222' } })),
      (s) => (s.mcpServers = [...s.mcpServers!, http({ name: 'second', headers: { 'X-Key': 'third-secret-value-3333' } })]),
      (s) => delete s.mcpServers,
    ];
    for (const change of cases) {
      const after = structuredClone(before);
      change(after);
      const diff = JSON.stringify(diffSettings(before, after));
      expect(diff.length).toBeGreaterThan(2);
      for (const secret of [HEADER, ENV, 'another-secret', 'another-env-secret', 'plain-looking', 'third-secret']) expect(diff).not.toContain(secret);
    }
    expect(JSON.stringify(diffSettings(defaultSettings(), settings()))).not.toMatch(/secret-(1234|5678)/);
  });
});

describe('restoreMaskedMcpSecrets', () => {
  const masked = (server: McpServer) => mapSettingsSecrets(server, maskSecret, ['mcpServers', '0']);

  it('puts back the stored values for masked ones while the url origin or the command line stays', () => {
    const after = [masked(http({ url: 'https://mcp.example.com/v2/mcp' })), masked(stdio())];
    expect(restoreMaskedMcpSecrets(after, [http(), stdio()])).toEqual([]);
    expect(after.flatMap(mcpSecretsOf)).toEqual([HEADER, ENV]);
  });

  it('refuses them for another origin, transport, command or arguments, and for a server with nothing stored', () => {
    const moves: McpServer[] = [
      masked(http({ url: 'https://attacker.example.net/mcp' })),
      masked(http({ url: 'http://mcp.example.com/mcp' })),
      masked(stdio({ command: 'sh' })),
      masked(stdio({ args: ['-y', '@attacker/mcp'] })),
      masked(http({ name: 'renamed' })),
    ];
    for (const moved of moves) {
      const problems = restoreMaskedMcpSecrets([moved], [http(), stdio()]);
      expect(problems).toHaveLength(1);
      expect(problems[0].field).toMatch(/^settings\.mcpServers\[0\]\.(headers\.Authorization|env\.TOKEN)$/);
      expect(JSON.stringify(moved)).not.toMatch(/secret-(1234|5678)/);
    }
    expect(restoreMaskedMcpSecrets([masked(stdio({ transport: 'http', url: 'https://x.example' } as Partial<McpServer>))], [stdio()])).toHaveLength(1);
  });
});

describe('mcpServerProblems', () => {
  it('refuses a name used twice, headers the relay owns, and a header named twice', () => {
    const s = { ...defaultSettings(), mcpServers: [http(), http({ headers: { 'mcp-session-id': 'x', 'X-A': 'a', 'x-a': 'b', 'Proxy-Authorization': 'p' } })] };
    expect(mcpServerProblems(s).map((p) => p.field)).toEqual([
      'settings.mcpServers[1].name',
      'settings.mcpServers[1].headers.mcp-session-id',
      'settings.mcpServers[1].headers.x-a',
      'settings.mcpServers[1].headers.Proxy-Authorization',
    ]);
    expect(mcpServerProblems({ ...defaultSettings(), mcpServers: [http(), stdio()] })).toEqual([]);
  });
});

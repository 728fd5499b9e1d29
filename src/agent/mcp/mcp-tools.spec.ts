import { selectCommands } from '../hooks/hook-runner';
import { ToolSelection } from '../tools/tool-selection';
import { mcpAutonomyRefusal, McpServerDefinition, mcpToolName, offeredTools, permittedTools, resultText, TOOL_NAME, usableMcpServers } from './mcp-tools';

const github: McpServerDefinition = { name: 'github', transport: 'http', url: 'https://mcp.example.com/mcp' };
const local: McpServerDefinition = { name: 'local', transport: 'stdio', command: 'node', allowedTools: ['echo'] };
const listed = [
  {
    name: 'echo',
    description: 'Echoes.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, $schema: 'http://json-schema.org/draft-07/schema#' },
  },
  { name: 'drop_tables', inputSchema: { type: 'object' } },
];

describe('MCP servers the agent uses', () => {
  it('uses none when mcpPolicy is off, and only the allowlisted ones when it lists any', () => {
    const mcpServers = [github, local];
    expect(usableMcpServers({ mcpPolicy: { enabled: false, allowlist: [] }, mcpServers })).toEqual([]);
    expect(usableMcpServers({ mcpPolicy: { enabled: true, allowlist: [] }, mcpServers }).map((s) => s.name)).toEqual(['github', 'local']);
    expect(usableMcpServers({ mcpPolicy: { enabled: true, allowlist: ['local', 'other'] }, mcpServers }).map((s) => s.name)).toEqual(['local']);
  });

  it('offers every tool without allowedTools, and only the listed ones with it (an empty list: none)', () => {
    expect(permittedTools(github, listed).map((t) => t.name)).toEqual(['echo', 'drop_tables']);
    expect(permittedTools(local, listed).map((t) => t.name)).toEqual(['echo']);
    expect(permittedTools({ allowedTools: [] }, listed)).toEqual([]);
  });
});

describe('mcpToolName', () => {
  it('is mcp__{server}__{tool}, which hook matchers like mcp__github__.* select', () => {
    expect(mcpToolName('github', 'create_issue')).toBe('mcp__github__create_issue');
    const hooks = { PreToolUse: [{ matcher: 'mcp__github__.*', hooks: [{ type: 'command' as const, command: 'true' }] }] };
    expect(selectCommands(hooks, 'PreToolUse', 'mcp__github__create_issue').commands).toHaveLength(1);
    expect(selectCommands(hooks, 'PreToolUse', 'mcp__gitlab__create_issue').commands).toHaveLength(0);
  });

  it("fits the model's rule for tool names: other characters become _, long names are cut with a hash that keeps them apart", () => {
    expect(mcpToolName('fs', 'read.file/v2 ü')).toBe('mcp__fs__read_file_v2__');
    const long = 'x'.repeat(80);
    const a = mcpToolName('server', `${long}a`);
    const b = mcpToolName('server', `${long}b`);
    for (const name of [a, b]) expect(name).toMatch(TOOL_NAME);
    expect(a).not.toBe(b);
    expect(a.startsWith('mcp__server__xxx')).toBe(true);
  });
});

describe('offeredTools', () => {
  it("gives each tool its name, description and input schema (without $schema), leaving out allowedTools' others and disabled ones", () => {
    const taken = new Set<string>();
    expect(offeredTools(local, listed, new ToolSelection({}), taken)).toEqual([
      {
        name: 'mcp__local__echo',
        server: 'local',
        tool: 'echo',
        description: 'Echoes. (tool echo of the MCP server local)',
        parameters: { type: 'object', properties: { text: { type: 'string' } } },
      },
    ]);
    expect(offeredTools(github, listed, new ToolSelection({ disabledToolIds: ['mcp__github__echo'] }), new Set()).map((t) => t.tool)).toEqual(['drop_tables']);
    expect(offeredTools(github, listed, new ToolSelection({ disabledToolIds: ['github/drop_tables'] }), new Set()).map((t) => t.tool)).toEqual(['echo']);
  });

  it('gives a schema without properties some, and offers a name already taken only once', () => {
    const taken = new Set<string>();
    expect(offeredTools(github, [{ name: 'drop_tables', inputSchema: { type: 'object' } }], new ToolSelection({}), taken)[0].parameters).toEqual({
      type: 'object',
      properties: {},
    });
    expect(offeredTools(github, [{ name: 'drop.tables', inputSchema: {} }], new ToolSelection({}), taken)).toEqual([]);
  });
});

describe('mcpAutonomyRefusal', () => {
  const byName = (mcpAutonomyOverrides: Record<string, 'off' | 'low' | 'medium' | 'high'>) => ({ mcpAutonomyOverrides, mcpAutonomyUrlOverrides: [] });
  const github = { name: 'github' };

  it('lets everything run without a level or at high', () => {
    expect(mcpAutonomyRefusal(undefined, github, byName({}))).toBeNull();
    expect(mcpAutonomyRefusal('high', github, byName({}))).toBeNull();
  });

  it('needs high for a server without an override, and the override otherwise', () => {
    expect(mcpAutonomyRefusal('medium', github, byName({}))).toMatch(/autonomyLevel medium.*need high/);
    expect(mcpAutonomyRefusal('medium', github, byName({ github: 'medium' }))).toBeNull();
    expect(mcpAutonomyRefusal('low', github, byName({ github: 'medium' }))).toMatch(/need medium .*mcpAutonomyOverrides/);
    expect(mcpAutonomyRefusal('off', { name: 'docs' }, byName({ docs: 'off' }))).toBeNull();
  });

  it('by URL: the first mcpAutonomyUrlOverrides entry matching an HTTP server, off without a level; a name override comes first', () => {
    const rules = {
      mcpAutonomyOverrides: { pinned: 'high' as const },
      mcpAutonomyUrlOverrides: [{ urlPattern: 'https://mcp.example.com/*', level: 'medium' as const }, { urlPattern: 'https://docs.example.com/*' }],
    };
    const at = (url: string, name = 'any') => ({ name, url });
    expect(mcpAutonomyRefusal('medium', at('https://mcp.example.com/github/v1'), rules)).toBeNull();
    expect(mcpAutonomyRefusal('low', at('https://mcp.example.com/github'), rules)).toMatch(
      /need medium \(the organization's mcpAutonomyUrlOverrides \(https:\/\/mcp\.example\.com\/\*\)\)/,
    );
    expect(mcpAutonomyRefusal('off', at('https://docs.example.com/search'), rules)).toBeNull();
    // Not a prefix or a look-alike host: the whole URL must match.
    expect(mcpAutonomyRefusal('medium', at('https://mcp.example.com.evil.test/x'), rules)).toMatch(/need high/);
    expect(mcpAutonomyRefusal('medium', at('http://mcp.example.com/x'), rules)).toMatch(/need high/);
    expect(mcpAutonomyRefusal('medium', at('https://mcp.example.com/x', 'pinned'), rules)).toMatch(/need high \(the organization's mcpAutonomyOverrides\)/);
    // A stdio server has no URL for a pattern to match.
    expect(mcpAutonomyRefusal('medium', { name: 'local' }, { ...rules, mcpAutonomyUrlOverrides: [{ urlPattern: '*' }] })).toMatch(/need high/);
  });
});

describe('resultText', () => {
  it('joins text, describes images and resources, and falls back on structured content', () => {
    expect(
      resultText(
        [
          { type: 'text', text: 'one' },
          { type: 'image', mimeType: 'image/png', data: 'AAAA' },
          { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'hello' } },
          { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AA==' } },
          { type: 'resource_link', uri: 'file:///c', name: 'c' },
        ],
        undefined,
      ),
    ).toBe(
      'one\n[image (image/png), 3 bytes, not shown]\n[resource file:///a.txt (text/plain)]\nhello\n[resource file:///b.bin] (binary, not shown)\n[resource link file:///c: c]',
    );
    expect(resultText([], { sum: 3 })).toBe('{"sum":3}');
    expect(resultText([], undefined)).toBe('(no output)');
    expect(resultText([{ type: 'text', text: 'abcdef' }], undefined, 3)).toBe('abc\n[output truncated: only its first 3 characters are shown]');
  });
});

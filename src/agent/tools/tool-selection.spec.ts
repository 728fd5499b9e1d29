import { ToolSelection } from './tool-selection';

describe('ToolSelection', () => {
  const github = { server: 'github', tool: 'create_issue' };

  it('allows every tool when the session lists none', () => {
    const all = new ToolSelection({});
    expect(['Read', 'Execute', 'Task', 'mcp__github__create_issue'].every((name) => all.allows(name))).toBe(true);
  });

  it('with enabledToolIds, allows only those (case aside; MCP tools by offered name or server/tool); an empty list allows none', () => {
    const some = new ToolSelection({ enabledToolIds: ['read', 'github/create_issue'] });
    expect(some.allows('Read')).toBe(true);
    expect(some.allows('mcp__github__create_issue', github)).toBe(true);
    expect(some.refusal('Execute')).toBe('Execute is not among the tools this session enables (its enabledToolIds); it was not run.');
    expect(some.allows('mcp__github__delete_repo', { server: 'github', tool: 'delete_repo' })).toBe(false);
    expect(new ToolSelection({ enabledToolIds: [] }).allows('Read')).toBe(false);
  });

  it('disabledToolIds wins over enabledToolIds, for built-in and MCP tools', () => {
    const both = new ToolSelection({ enabledToolIds: ['Read', 'Execute', 'mcp__github__create_issue'], disabledToolIds: ['EXECUTE', 'github/create_issue'] });
    expect(both.allows('Read')).toBe(true);
    expect(both.refusal('Execute')).toBe('Execute is disabled in this session (its disabledToolIds); it was not run.');
    expect(both.allows('mcp__github__create_issue', github)).toBe(false);
  });

  it('a server/tool id never matches another server of a similar name', () => {
    const selection = new ToolSelection({ enabledToolIds: ['git/hub'] });
    expect(selection.allows('mcp__git__hub', { server: 'git', tool: 'hub' })).toBe(true);
    expect(selection.allows('mcp__git_hub__x', { server: 'git_hub', tool: 'x' })).toBe(false);
  });
});

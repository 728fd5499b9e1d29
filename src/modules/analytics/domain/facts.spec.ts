import { USER_MESSAGE_SOURCES } from '../../sessions';
import {
  agentMessageFacts,
  autonomyLevelOf,
  clientOf,
  delegationLevelOf,
  Fact,
  FactKind,
  MessageFacts,
  normalizeToolName,
  SessionFacts,
  userMessageFacts,
} from './facts';
import { fileKind } from './languages';

const AT = new Date('2026-03-02T10:00:00Z');
const SESSION: SessionFacts = { id: 'session-1', ownerId: 'owner-1', settings: {} };

const message = (fields: Partial<MessageFacts>): MessageFacts => ({
  role: 'assistant',
  userMessageSource: null,
  authorId: null,
  content: [],
  attributes: {},
  createdAt: AT,
  ...fields,
});
const toolUse = (name: unknown, input?: unknown) => ({ type: 'tool_use', id: `t-${String(name)}`, name, ...(input === undefined ? {} : { input }) });
/** The facts of one assistant message, without the assistant-message fact itself. */
const effects = (...content: MessageFacts['content']): Fact[] => agentMessageFacts(SESSION, message({ content })).slice(1);
/** The facts of one tool call, without its assistant-message and tool-call facts, as `kind[:name][/detail]`. */
const toolEffects = (name: string, input: Record<string, unknown>): string[] =>
  effects(toolUse(name, input))
    .slice(1)
    .map((f) => `${f.kind}${f.name ? `:${f.name}` : ''}${f.detail ? `/${f.detail}` : ''}`);
const shell = (command: string, tool = 'Bash') => toolEffects(tool, { command });

describe('clientOf', () => {
  const expected: Record<(typeof USER_MESSAGE_SOURCES)[number], string> = {
    web: 'web',
    desktop: 'web',
    cli_tui: 'terminal-ui',
    cli_acp: 'terminal-ui',
    cli_exec: 'non-interactive-cli',
    sessions_api: 'non-interactive-cli',
    api: 'non-interactive-cli',
    automation: 'non-interactive-cli',
    'readiness-remediation': 'non-interactive-cli',
    'readiness-evaluation': 'non-interactive-cli',
    'wiki-generation': 'non-interactive-cli',
    'wiki-ci-setup': 'non-interactive-cli',
    chat_integration_a: 'non-interactive-cli',
    chat_integration_b: 'non-interactive-cli',
    issue_tracker_a: 'non-interactive-cli',
    issue_tracker_b: 'non-interactive-cli',
  };

  it('covers every user message source the sessions accept', () => {
    expect(Object.keys(expected).sort()).toEqual([...USER_MESSAGE_SOURCES].sort());
  });

  it.each(USER_MESSAGE_SOURCES.map((source) => [source, expected[source]]))('%s is %s', (source, client) => {
    expect(clientOf(source)).toBe(client);
  });

  it('a message without a source is web; an unknown source is non-interactive; matching is exact', () => {
    expect(clientOf(null)).toBe('web');
    expect(clientOf('something_new')).toBe('non-interactive-cli');
    expect(clientOf('')).toBe('non-interactive-cli');
    expect(clientOf('CLI_TUI')).toBe('non-interactive-cli');
    expect(clientOf('Web')).toBe('non-interactive-cli');
  });
});

describe('delegationLevelOf and autonomyLevelOf', () => {
  const MODES = [undefined, 'auto', 'spec', 'ask', 'other'];
  const LEVELS = [undefined, 'off', 'low', 'medium', 'high', 'other'];
  const autonomyByLevel: Record<string, string> = {
    off: 'manual',
    low: 'auto_low',
    medium: 'auto_medium',
    high: 'auto_high',
    undefined: 'auto_low',
    other: 'auto_low',
  };
  const cases = MODES.flatMap((interactionMode) => LEVELS.map((autonomyLevel) => [interactionMode, autonomyLevel] as const));

  it.each(cases)('interactionMode %s, autonomyLevel %s', (interactionMode, autonomyLevel) => {
    const settings = { ...(interactionMode ? { interactionMode } : {}), ...(autonomyLevel ? { autonomyLevel } : {}) };
    const autonomy = interactionMode === 'ask' ? 'manual' : autonomyByLevel[String(autonomyLevel)];
    const delegation = interactionMode === 'spec' ? 'spec' : interactionMode === 'ask' ? 'manual' : autonomy.replace('_', '-');
    expect(autonomyLevelOf(settings)).toBe(autonomy);
    expect(delegationLevelOf(settings)).toBe(delegation);
  });

  it('spells out the table for the usual settings', () => {
    expect(delegationLevelOf({})).toBe('auto-low');
    expect(delegationLevelOf({ autonomyLevel: 'high' })).toBe('auto-high');
    expect(delegationLevelOf({ interactionMode: 'auto', autonomyLevel: 'medium' })).toBe('auto-medium');
    expect(delegationLevelOf({ interactionMode: 'auto', autonomyLevel: 'off' })).toBe('manual');
    expect(delegationLevelOf({ interactionMode: 'spec', autonomyLevel: 'high' })).toBe('spec');
    expect(delegationLevelOf({ interactionMode: 'ask', autonomyLevel: 'high' })).toBe('manual');
    // Tool calls in spec mode run at the session's autonomy level; in ask mode, manually.
    expect(autonomyLevelOf({ interactionMode: 'spec', autonomyLevel: 'high' })).toBe('auto_high');
    expect(autonomyLevelOf({ interactionMode: 'spec' })).toBe('auto_low');
    expect(autonomyLevelOf({ interactionMode: 'ask', autonomyLevel: 'high' })).toBe('manual');
  });

  it('matches levels exactly (no case folding)', () => {
    expect(autonomyLevelOf({ autonomyLevel: 'HIGH' })).toBe('auto_low');
    expect(delegationLevelOf({ interactionMode: 'SPEC' })).toBe('auto-low');
  });
});

describe('normalizeToolName', () => {
  it.each([
    ['Bash', 'Bash'],
    ['"Bash"', 'Bash'],
    ["'Read'", 'Read'],
    ['`Grep`', 'Grep'],
    ['[Edit]', 'Edit'],
    ['(Write)', 'Write'],
    ['<Glob>', 'Glob'],
    ['{Task}', 'Task'],
    ['((Bash))', 'Bash'],
    [' "[Bash]" ', 'Bash'],
    ['  Bash  ', 'Bash'],
    ['\tBash\t', 'Bash'],
    ['Bash\nfoo', 'Bash'],
    ['Bash\r\n{"command":"ls"}', 'Bash'],
    ['Bash\\n', 'Bash'],
    ['Bash.', 'Bash'],
    ['Bash:', 'Bash'],
    ['Bash-', 'Bash'],
    ['Bash...', 'Bash'],
    ['Bash.:-', 'Bash'],
    ['Bash,', 'Bash'],
    ['Bash;', 'Bash'],
    ['Bash)', 'Bash'],
    ['Bash"', 'Bash'],
    ['Bash tool', 'Bash'],
    ['read_file.', 'read_file'],
    ['_private', '_private'],
    ['Tool.v2', 'Tool.v2'],
    ['ns:tool', 'ns:tool'],
    ['multi-edit', 'multi-edit'],
  ])('%j is %s', (raw, tool) => {
    expect(normalizeToolName(raw)).toEqual({ tool });
  });

  it.each(['', '   ', '""', "''", '[]', '!!!', '...', '\n', 'é'])('%j is unknown', (raw) => {
    expect(normalizeToolName(raw)).toEqual({ tool: 'unknown' });
  });

  it('folds an MCP server to lower case, keeping the tool as written', () => {
    expect(normalizeToolName('mcp__GitHub__create_issue')).toEqual({ tool: 'mcp__github__create_issue', mcpServer: 'github' });
    expect(normalizeToolName('mcp__github__create_issue')).toEqual({ tool: 'mcp__github__create_issue', mcpServer: 'github' });
    expect(normalizeToolName('MCP__GITHUB__Create_Issue')).toEqual({ tool: 'mcp__github__Create_Issue', mcpServer: 'github' });
    expect(normalizeToolName('"mcp__Linear__list_issues",')).toEqual({ tool: 'mcp__linear__list_issues', mcpServer: 'linear' });
    // The server ends at the first `__` after it.
    expect(normalizeToolName('mcp__Srv__Tool__Sub')).toEqual({ tool: 'mcp__srv__Tool__Sub', mcpServer: 'srv' });
    expect(normalizeToolName('mcp__Git_Hub__x')).toEqual({ tool: 'mcp__git_hub__x', mcpServer: 'git_hub' });
  });

  it('is not an MCP tool without both a server and a tool', () => {
    expect(normalizeToolName('mcp__a__')).toEqual({ tool: 'mcp__a__' });
    expect(normalizeToolName('mcp____x')).toEqual({ tool: 'mcp____x' });
    expect(normalizeToolName('mcp_github_x')).toEqual({ tool: 'mcp_github_x' });
  });

  it('caps a name at 200 characters', () => {
    expect(normalizeToolName('x'.repeat(250))).toEqual({ tool: 'x'.repeat(200) });
    expect(normalizeToolName('y'.repeat(200))).toEqual({ tool: 'y'.repeat(200) });
    const long = normalizeToolName(`mcp__Server__${'t'.repeat(300)}`);
    expect(long).toEqual({ tool: `mcp__server__${'t'.repeat(200 - 'mcp__server__'.length)}`, mcpServer: 'server' });
  });
});

describe('userMessageFacts', () => {
  const facts = (text: string | undefined, fields: Partial<MessageFacts> = {}, settings: SessionFacts['settings'] = {}) =>
    userMessageFacts(
      { ...SESSION, settings },
      message({ role: 'user', userMessageSource: 'cli_tui', content: text === undefined ? [] : [{ type: 'text', text }], ...fields }),
    );
  const command = (text: string | undefined, fields: Partial<MessageFacts> = {}) => facts(text, fields).find((f) => f.kind === FactKind.SlashCommand)?.name;

  it('records the message with its client, delegation level and author', () => {
    expect(facts('hello', { authorId: 'author-1' }, { interactionMode: 'spec' })).toEqual([
      { kind: FactKind.UserMessage, at: AT, userId: 'author-1', sessionId: 'session-1', client: 'terminal-ui', level: 'spec' },
    ]);
    // Without an author, the message is the session owner's.
    expect(facts('hello', { userMessageSource: null }, { autonomyLevel: 'high' })).toEqual([
      { kind: FactKind.UserMessage, at: AT, userId: 'owner-1', sessionId: 'session-1', client: 'web', level: 'auto-high' },
    ]);
  });

  it.each([
    ['/review', '/review'],
    ['/review please look at the diff', '/review'],
    ['  /review', '/review'],
    ['\n\t/review now', '/review'],
    ['/my-plugin:do_it arg', '/my-plugin:do_it'],
    ['/compact.', '/compact'],
    ['/Init', '/Init'],
  ])('detects the slash command in %j', (text, name) => {
    const all = facts(text);
    expect(all.map((f) => f.kind)).toEqual([FactKind.UserMessage, FactKind.SlashCommand]);
    expect(all[1]).toEqual({ kind: FactKind.SlashCommand, at: AT, userId: 'owner-1', sessionId: 'session-1', name });
  });

  it.each([
    ['/', '/'],
    ['//x', '//x'],
    ['/ review', '/ review'],
    ['/123', '/123'],
    ['/_x', '/_x'],
    ['please run /review', 'text not first'],
    ['a/b', 'a path'],
    ['', 'empty text'],
    ['\\/review', 'escaped'],
    ['/usr/local/bin/node crashes on start', 'a path'],
    ['/etc/hosts', 'a path'],
  ])('no slash command in %j (%s)', (text) => {
    expect(facts(text).map((f) => f.kind)).toEqual([FactKind.UserMessage]);
  });

  it('looks only at the first text block, wherever it is', () => {
    expect(
      command(undefined, {
        content: [
          { type: 'image', source: {} },
          { type: 'text', text: '/review' },
        ],
      }),
    ).toBe('/review');
    expect(
      command(undefined, {
        content: [
          { type: 'text', text: 'look' },
          { type: 'text', text: '/review' },
        ],
      }),
    ).toBeUndefined();
    expect(command(undefined, { content: [] })).toBeUndefined();
    expect(command(undefined, { content: [{ type: 'text', text: 42 }] })).toBeUndefined();
  });

  it('caps the command name at 200 characters', () => {
    expect(command(`/${'a'.repeat(300)}`)).toBe(`/${'a'.repeat(199)}`);
  });
});

describe('agentMessageFacts', () => {
  it("records an assistant message with its model, and its tool calls at the autonomy level, all the owner's", () => {
    const facts = agentMessageFacts(
      { ...SESSION, settings: { interactionMode: 'spec', autonomyLevel: 'medium' } },
      message({
        authorId: 'someone-else',
        attributes: { modelId: 'model-a' },
        content: [{ type: 'text', text: 'On it' }, toolUse('Read', { file_path: 'a.ts' }), toolUse('mcp__GitHub__list_issues', {})],
      }),
    );
    const base = { at: AT, userId: 'owner-1', sessionId: 'session-1' };
    expect(facts).toEqual([
      { ...base, kind: FactKind.AssistantMessage, name: 'model-a' },
      { ...base, kind: FactKind.ToolCall, name: 'Read', level: 'auto_medium' },
      { ...base, kind: FactKind.ToolCall, name: 'mcp__github__list_issues', level: 'auto_medium', detail: 'github' },
    ]);
  });

  it('an assistant message without a (string, non-empty) model has no name', () => {
    for (const attributes of [{}, { modelId: '' }, { modelId: 42 }]) {
      expect(agentMessageFacts(SESSION, message({ attributes }))).toEqual([
        { kind: FactKind.AssistantMessage, at: AT, userId: 'owner-1', sessionId: 'session-1' },
      ]);
    }
    expect(agentMessageFacts(SESSION, message({ attributes: { modelId: 'm'.repeat(300) } }))[0].name).toBe('m'.repeat(200));
  });

  it('ignores tool_use blocks without a string name, and blocks of other types', () => {
    const facts = effects(
      toolUse(undefined, {}),
      toolUse(42, {}),
      toolUse(null),
      { type: 'tool_result', name: 'Bash' },
      { type: 'text', name: 'Bash' },
      toolUse('', {}),
    );
    // An empty name is still a tool call, of `unknown`.
    expect(facts.map((f) => [f.kind, f.name])).toEqual([[FactKind.ToolCall, 'unknown']]);
  });

  it('a tool_use without input is a tool call with no effects', () => {
    expect(effects(toolUse('Write'), toolUse('Bash', null)).map((f) => [f.kind, f.name])).toEqual([
      [FactKind.ToolCall, 'Write'],
      [FactKind.ToolCall, 'Bash'],
    ]);
  });

  it('records skills by skill, name or command', () => {
    expect(toolEffects('Skill', { skill: 'pdf', name: 'other' })).toEqual(['skill:pdf']);
    expect(toolEffects('skill', { name: 'xlsx' })).toEqual(['skill:xlsx']);
    expect(toolEffects('"Skill"', { command: 'docx' })).toEqual(['skill:docx']);
    expect(toolEffects('Skill', {})).toEqual([]);
    expect(toolEffects('Skill', { skill: '' })).toEqual([]);
    expect(toolEffects('Skills', { skill: 'pdf' })).toEqual([]);
  });

  it.each(['Write', 'write', 'Create', 'create_file', 'write_file', 'CreateFile', 'writeFile'])('%s creates a file', (tool) => {
    expect(toolEffects(tool, { file_path: 'src/app.ts' })).toEqual(['file_created:ts/TypeScript']);
  });

  it.each(['Edit', 'MultiEdit', 'multi_edit', 'edit_file', 'EditFile', 'str_replace', 'apply_patch', 'ApplyPatch'])('%s edits a file', (tool) => {
    expect(toolEffects(tool, { file_path: 'lib/x.py' })).toEqual(['file_edited:py/Python']);
  });

  it('takes the path from file_path, filePath, path or target_file, in that order', () => {
    expect(toolEffects('Write', { filePath: 'a.go' })).toEqual(['file_created:go/Go']);
    expect(toolEffects('Write', { path: 'Makefile' })).toEqual(['file_created:(none)/Makefile']);
    expect(toolEffects('Edit', { target_file: 'x.c' })).toEqual(['file_edited:c/C']);
    expect(toolEffects('Edit', { file_path: 'a.ts', path: 'b.py' })).toEqual(['file_edited:ts/TypeScript']);
    expect(toolEffects('Edit', { file_path: '', path: 'b.py' })).toEqual(['file_edited:py/Python']);
  });

  it('reads the files an apply_patch patch adds and updates', () => {
    expect(toolEffects('apply_patch', { input: '*** Begin Patch\n*** Update File: a.ts\n@@\n-a\n+b\n*** Add File: docs/new.md\n+hi\n*** End Patch' })).toEqual([
      'file_edited:ts/TypeScript',
      'file_created:md/Markdown',
    ]);
    expect(toolEffects('apply_patch', { input: 'no patch headers here' })).toEqual([]);
  });

  it('no file without a path, or from a tool that neither creates nor edits', () => {
    expect(toolEffects('Write', {})).toEqual([]);
    expect(toolEffects('Write', { file_path: '' })).toEqual([]);
    expect(toolEffects('Write', { file_path: 42 })).toEqual([]);
    expect(toolEffects('Read', { file_path: 'a.ts' })).toEqual([]);
    expect(toolEffects('mcp__fs__write_file', { path: 'a.ts' })).toEqual([]);
  });

  it.each([
    ['create', 'file_created:ts/TypeScript'],
    ['str_replace', 'file_edited:ts/TypeScript'],
    ['insert', 'file_edited:ts/TypeScript'],
  ])('str_replace_based_edit_tool %s', (command, fact) => {
    expect(toolEffects('str_replace_based_edit_tool', { command, path: 'src/a.ts' })).toEqual([fact]);
  });

  it.each(['view', 'undo_edit', '', 'CREATE'])('str_replace_based_edit_tool %j touches no file', (command) => {
    expect(toolEffects('str_replace_based_edit_tool', { command, path: 'src/a.ts' })).toEqual([]);
  });

  it.each([
    ['git commit -m x', 1],
    ['git -C "my dir" commit -m x', 1],
    ["git -C 'my dir' commit -m x", 1],
    ['git commit-tree abc', 0],
    ['git commit', 1],
    ['git  commit', 1],
    ['git -C dir commit -m x', 1],
    ['git -C dir -c user.name=x commit -m y', 1],
    ['git --no-pager commit', 1],
    ['git --git-dir=.git --work-tree=. commit', 1],
    ['git add -A && git commit -m a && git commit --amend --no-edit', 2],
    ['git commit -m a; git -C sub commit -m b', 2],
    ['git commit -m a\ngit commit -m b\ngit commit -m c', 3],
    ['git status', 0],
    ['git log --grep commit', 0],
    ['git -C dir log', 0],
    ['gitcommit', 0],
    ['digit commit', 0],
    ['GIT COMMIT', 0],
    ['', 0],
    // Only git running commit counts: not a word that says it.
    ['echo "git commit"', 0],
    ["echo 'git commit -m x' >> notes.md", 0],
    ['echo git commit', 0],
    ['printf "%s\\n" "run git commit later"', 0],
    ['grep -r "git commit" docs', 0],
    ['git log --grep "git commit"', 0],
    ['cat <<EOF\ngit commit -m x\nEOF', 0],
    ['# git commit -m x', 0],
    ['echo "$(git commit -m x)"', 1],
    ['sudo git commit -m x', 1],
    ['env GIT_AUTHOR_NAME=a git commit -m x', 1],
    ['/usr/bin/git commit -m x', 1],
    ['cd repo && git commit -m "fix: git commit counting"', 1],
    ['(cd repo; git commit -m x)', 1],
    ['if true; then git commit -m x; fi', 1],
    // Not valid shell: read where commands start.
    ['echo "git commit', 0],
    ['git commit -m "unterminated', 1],
  ])('%j counts %i commit(s)', (command, n) => {
    expect(shell(command)).toEqual(Array(n).fill('git_commit'));
  });

  it.each([
    ['gh pr create --fill', 1],
    ['gh  pr   create', 1],
    ['glab mr create --title x', 1],
    ['hub pull-request -m x', 1],
    ['git push -u origin HEAD && gh pr create --fill', 1],
    ['gh pr create --draft; gh pr create --repo o/r', 2],
    ['gh pr list', 0],
    ['gh pr view 12', 0],
    ['gh issue create', 0],
    ['echo "gh pr create"', 0],
  ])('%j counts %i pull request(s)', (command, n) => {
    expect(shell(command)).toEqual(Array(n).fill('git_pr'));
  });

  it('counts commits and pull requests of one command', () => {
    expect(shell('git commit -m x && git push && gh pr create --fill')).toEqual(['git_commit', 'git_pr']);
  });

  it('reads commands only from shell tools, in command or cmd', () => {
    for (const tool of ['Bash', 'bash', 'shell', 'execute', 'exec', 'run', 'run_command', 'terminal', 'PowerShell'])
      expect(shell('git commit -m x', tool)).toEqual(['git_commit']);
    expect(toolEffects('shell', { cmd: 'git commit' })).toEqual(['git_commit']);
    expect(toolEffects('Bash', { command: '', cmd: 'git commit' })).toEqual(['git_commit']);
    expect(toolEffects('Bash', { command: 42 })).toEqual([]);
    expect(shell('git commit -m x', 'Read')).toEqual([]);
    expect(shell('git commit -m x', 'mcp__shell__bash')).toEqual([]);
  });

  it('counts a pull request created through an MCP tool, whatever the case, and only through MCP', () => {
    expect(toolEffects('mcp__GitHub__create_pull_request', { title: 'x' })).toEqual(['git_pr']);
    expect(toolEffects('mcp__gitlab__Create_Merge_Request', {})).toEqual(['git_pr']);
    expect(toolEffects('create_pull_request', {})).toEqual([]);
    expect(toolEffects('mcp__github__create_pull_request_review', { event: 'APPROVE' })).toEqual([]);
    expect(toolEffects('mcp__gitlab__create_merge_request', {})).toEqual(['git_pr']);
    expect(toolEffects('mcp__github__list_pull_requests', {})).toEqual([]);
  });

  it('records one hook per command, with its event and matcher, on an assistant message', () => {
    const facts = agentMessageFacts(
      SESSION,
      message({ attributes: { hookEventName: 'PostToolUse', hookMatcher: 'Edit', hookCommands: [{ command: 'npm run lint' }, { command: 'npm test' }] } }),
    );
    const base = { at: AT, userId: 'owner-1', sessionId: 'session-1' };
    expect(facts).toEqual([
      { ...base, kind: FactKind.AssistantMessage },
      { ...base, kind: FactKind.Hook, name: 'PostToolUse', detail: 'Edit', command: 'npm run lint' },
      { ...base, kind: FactKind.Hook, name: 'PostToolUse', detail: 'Edit', command: 'npm test' },
    ]);
  });

  it.each(['system', 'tool'])('records hooks on a %s message, with an empty matcher when none, and nothing else', (role) => {
    const facts = agentMessageFacts(
      SESSION,
      message({
        role,
        attributes: { hookEventName: 'Stop', hookCommands: [{ command: 'notify-send done' }] },
        content: [toolUse('Bash', { command: 'git commit' })],
      }),
    );
    expect(facts).toEqual([{ kind: FactKind.Hook, at: AT, userId: 'owner-1', sessionId: 'session-1', name: 'Stop', detail: '', command: 'notify-send done' }]);
  });

  it('skips hook entries without a command, and hooks without an event or a command list', () => {
    const hooks = (attributes: Record<string, unknown>) => agentMessageFacts(SESSION, message({ role: 'system', attributes })).map((f) => f.command);
    expect(
      hooks({ hookEventName: 'Stop', hookMatcher: 42, hookCommands: [{ command: 'a' }, {}, null, { command: '' }, { command: 7 }, 'b', { command: 'c' }] }),
    ).toEqual(['a', 'c']);
    expect(hooks({ hookCommands: [{ command: 'a' }] })).toEqual([]);
    expect(hooks({ hookEventName: '', hookCommands: [{ command: 'a' }] })).toEqual([]);
    expect(hooks({ hookEventName: 'Stop', hookCommands: { command: 'a' } })).toEqual([]);
    // A run counts once, when it has ended: not on its `executing` record.
    expect(hooks({ hookEventName: 'Stop', hookStatus: 'executing', hookCommands: [{ command: 'a' }] })).toEqual([]);
    expect(hooks({ hookEventName: 'Stop', hookStatus: 'completed', hookCommands: [{ command: 'a' }] })).toEqual(['a']);
    expect(hooks({ hookEventName: 'Stop', hookStatus: 'error', hookCommands: [{ command: 'a' }] })).toEqual(['a']);
    expect(hooks({ hookEventName: 'Stop' })).toEqual([]);
  });

  it('clips a hook command to 1000 characters and its event and matcher to 200', () => {
    const [hook] = agentMessageFacts(
      SESSION,
      message({ role: 'system', attributes: { hookEventName: 'E'.repeat(300), hookMatcher: 'M'.repeat(300), hookCommands: [{ command: 'c'.repeat(1500) }] } }),
    );
    expect(hook).toMatchObject({ name: 'E'.repeat(200), detail: 'M'.repeat(200), command: 'c'.repeat(1000) });
  });

  it('a system or tool message without hooks records nothing', () => {
    expect(agentMessageFacts(SESSION, message({ role: 'system', content: [{ type: 'text', text: 'x' }] }))).toEqual([]);
    expect(agentMessageFacts(SESSION, message({ role: 'tool', content: [toolUse('Bash', { command: 'git commit' })] }))).toEqual([]);
  });
});

describe('fileKind', () => {
  it.each([
    ['src/app.ts', 'ts', 'TypeScript'],
    ['include/x.h', 'h', 'C'],
    ['x.c', 'c', 'C'],
    ['lib/tool.py', 'py', 'Python'],
    ['main.go', 'go', 'Go'],
    ['app.js', 'js', 'JavaScript'],
    ['view.tsx', 'tsx', 'TSX'],
    ['x.hpp', 'hpp', 'C++'],
    ['config.json', 'json', 'JSON'],
    ['ci.yml', 'yml', 'YAML'],
    ['run.sh', 'sh', 'Shell'],
    ['Dockerfile', '(none)', 'Dockerfile'],
    ['build/Dockerfile', '(none)', 'Dockerfile'],
    ['Makefile', '(none)', 'Makefile'],
    ['a/b.c/Makefile', '(none)', 'Makefile'],
    ['CMakeLists.txt', 'txt', 'CMake'],
    ['README', '(none)', 'Other'],
    ['bin/noext', '(none)', 'Other'],
    ['a/b.c/noext', '(none)', 'Other'],
    ['trailing.', '(none)', 'Other'],
    ['FOO.TS', 'ts', 'TypeScript'],
    ['Main.JAVA', 'java', 'Java'],
    ['x.R', 'r', 'R'],
    ['archive.tar.gz', 'gz', 'Other'],
    ['data.unknownext', 'unknownext', 'Other'],
    ['.gitignore', '(none)', 'Ignore List'],
    ['.env', '(none)', 'Dotenv'],
    ['sub/.bashrc', '(none)', 'Shell'],
    ['dir\\sub\\file.ts', 'ts', 'TypeScript'],
    ['C:\\proj\\Main.JAVA', 'java', 'Java'],
    ['C:\\proj\\Dockerfile', '(none)', 'Dockerfile'],
    ['', '(none)', 'Other'],
    ['dir/', '(none)', 'Other'],
    // Extensions several languages claim go to the well-known one.
    ['README.md', 'md', 'Markdown'],
    ['src/main.rs', 'rs', 'Rust'],
    ['index.html', 'html', 'HTML'],
    ['config.yaml', 'yaml', 'YAML'],
    ['notes.txt', 'txt', 'Text'],
    ['schema.sql', 'sql', 'SQL'],
    ['View.m', 'm', 'Objective-C'],
    ['view.tsx', 'tsx', 'TSX'],
  ])('%j is %s / %s', (path, extension, language) => {
    expect(fileKind(path)).toEqual({ extension, language });
  });
});

import { parseShell } from '../../../agent/tools/shell-syntax';
import { fileKind } from './languages';

/** What a fact records. */
export enum FactKind {
  SessionStarted = 'session',
  UserMessage = 'user_message',
  AssistantMessage = 'assistant_message',
  ToolCall = 'tool_call',
  Skill = 'skill',
  SlashCommand = 'slash_command',
  Hook = 'hook',
  FileCreated = 'file_created',
  FileEdited = 'file_edited',
  GitCommit = 'git_commit',
  GitPullRequest = 'git_pr',
  TokenReport = 'token_report',
}

export const CLIENT_TYPES = ['terminal-ui', 'web', 'non-interactive-cli'] as const;
export type ClientType = (typeof CLIENT_TYPES)[number];

export const DELEGATION_LEVELS = ['auto-high', 'auto-medium', 'auto-low', 'spec', 'manual'] as const;
export type DelegationLevel = (typeof DELEGATION_LEVELS)[number];

export const AUTONOMY_LEVELS = ['auto_high', 'auto_medium', 'auto_low', 'manual'] as const;
export type AutonomyLevel = (typeof AUTONOMY_LEVELS)[number];

/** One fact, before it is stored with its organization, day and transaction. */
export interface Fact {
  kind: FactKind;
  at: Date;
  userId: string;
  sessionId: string | null;
  client?: ClientType;
  level?: DelegationLevel | AutonomyLevel;
  name?: string;
  detail?: string;
  command?: string;
}

/** The session a message belongs to, as the facts need it. */
export interface SessionFacts {
  id: string;
  ownerId: string;
  settings: { interactionMode?: string; autonomyLevel?: string };
}

/** A stored message, as the facts need it. */
export interface MessageFacts {
  role: string;
  userMessageSource: string | null;
  authorId: string | null;
  content: Array<{ type: string; [field: string]: unknown }>;
  attributes: Record<string, unknown>;
  createdAt: Date;
}

/**
 * `userMessageSource` to client type. Interactive terminals (the CLI's TUI, and editors driving it over
 * ACP) are `terminal-ui`; the web and desktop apps (the workspace interface) are `web`; everything that
 * runs without a person at a prompt (`cli_exec`, the Sessions API, automations, readiness and wiki jobs,
 * chat and issue-tracker integrations) is `non-interactive-cli`. A message without a source is `web`.
 */
export function clientOf(source: string | null): ClientType {
  switch (source) {
    case 'cli_tui':
    case 'cli_acp':
      return 'terminal-ui';
    case 'web':
    case 'desktop':
    case null:
      return 'web';
    default:
      return 'non-interactive-cli';
  }
}

/**
 * A session's delegation level: `spec` in spec mode, `manual` in ask mode or at autonomy `off`,
 * else `auto-<autonomyLevel>`; a session that names no autonomy level runs at `auto-low`.
 */
export function delegationLevelOf(settings: SessionFacts['settings']): DelegationLevel {
  if (settings.interactionMode === 'spec') return 'spec';
  if (settings.interactionMode === 'ask') return 'manual';
  return autonomyLevelOf(settings).replace('_', '-') as DelegationLevel;
}

/** The autonomy level tool calls run at: as the delegation level, with spec mode by its autonomy level. */
export function autonomyLevelOf(settings: SessionFacts['settings']): AutonomyLevel {
  if (settings.interactionMode === 'ask') return 'manual';
  switch (settings.autonomyLevel) {
    case 'high':
      return 'auto_high';
    case 'medium':
      return 'auto_medium';
    case 'off':
      return 'manual';
    default:
      return 'auto_low';
  }
}

const MAX_NAME = 200;
const MAX_COMMAND = 1000;

/**
 * A tool name as agents write it, cleaned of parsing artifacts (surrounding quotes, brackets or
 * spaces, trailing punctuation, a line break and what follows): the leading run of letters, digits
 * and `_ . : -`. An MCP tool (`mcp__<server>__<tool>`) gets its server in lower case, so servers
 * spelled in different cases count as one. Nothing left: `unknown`.
 */
export function normalizeToolName(raw: string): { tool: string; mcpServer?: string } {
  const match = /[A-Za-z0-9_][A-Za-z0-9_.:-]*/.exec(raw.trim().replace(/^["'`[(<{]+/, ''));
  const tool = match ? match[0].replace(/[.:-]+$/, '') : '';
  if (!tool) return { tool: 'unknown' };
  const mcp = /^mcp__(.+?)__(.+)$/i.exec(tool);
  if (!mcp) return { tool: tool.slice(0, MAX_NAME) };
  const mcpServer = mcp[1].toLowerCase().slice(0, MAX_NAME);
  return { tool: `mcp__${mcpServer}__${mcp[2]}`.slice(0, MAX_NAME), mcpServer };
}

const SKILL_TOOLS = new Set(['skill']);
const CREATE_TOOLS = new Set(['write', 'create', 'create_file', 'write_file', 'createfile', 'writefile']);
const EDIT_TOOLS = new Set(['edit', 'multiedit', 'multi_edit', 'edit_file', 'editfile', 'str_replace', 'apply_patch', 'applypatch']);
const EDITOR_TOOL = 'str_replace_based_edit_tool';
const SHELL_TOOLS = new Set(['bash', 'shell', 'execute', 'exec', 'run', 'run_command', 'terminal', 'powershell']);
/** A command line that may commit or open a pull request: only these are parsed. */
const MAY_COUNT = /\bcommit\b|\bcreate\b|\bpull-request\b/;
/** Options of git itself whose value is the next word (`git -C dir commit`). */
const GIT_VALUE_OPTIONS = new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--super-prefix', '--config-env', '--attr-source']);
/** Commands that run the command after them (`sudo git commit`, `env A=b git commit`). */
const WRAPPERS = new Set(['sudo', 'command', 'exec', 'nohup', 'time', 'env']);
/** When the line cannot be parsed: `git [options] commit` where a command starts; not `commit-tree`. */
const GIT_COMMIT_FALLBACK = /(?:^|[;&|()\n`]|\$\()\s*git\s+(?:-\S+\s+(?:"[^"]*"\s+|'[^']*'\s+|[^\s-]\S*\s+)?)*?commit(?![\w-])/g;
const PR_FALLBACK = /(?:^|[;&|()\n`]|\$\()\s*(?:gh\s+pr\s+create|glab\s+mr\s+create|hub\s+pull-request)\b/g;
/** Files an `apply_patch` patch adds and updates. */
const PATCH_FILE = /^\*\*\* (Add|Update) File: (.+)$/gm;

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.length > 0 ? value : undefined);
const clip = (value: string, max: number) => (value.length > max ? value.slice(0, max) : value);

/** A user message: the message (with its client and delegation level) and a leading slash command. */
export function userMessageFacts(session: SessionFacts, message: MessageFacts): Fact[] {
  const base = { at: message.createdAt, userId: message.authorId ?? session.ownerId, sessionId: session.id };
  const facts: Fact[] = [{ ...base, kind: FactKind.UserMessage, client: clientOf(message.userMessageSource), level: delegationLevelOf(session.settings) }];
  const first = message.content.find((block) => block.type === 'text');
  // `/review the diff` is a command; `/usr/local/bin` is a path.
  const command = /^\s*(\/[A-Za-z][\w:-]*)(?=$|\s|[.,;!?)])/.exec(text(first?.text) ?? '');
  if (command) facts.push({ ...base, kind: FactKind.SlashCommand, name: clip(command[1], MAX_NAME) });
  return facts;
}

/**
 * Agent messages: assistant messages, their tool calls (with the MCP server, skills, files created
 * and edited, commits and pull requests made through a tool), and hook runs recorded on any message
 * (one per command). Everything is the session owner's.
 */
export function agentMessageFacts(session: SessionFacts, message: MessageFacts): Fact[] {
  const base = { at: message.createdAt, userId: session.ownerId, sessionId: session.id };
  const facts: Fact[] = [];
  if (message.role === 'assistant') {
    const model = text(message.attributes.modelId);
    facts.push({ ...base, kind: FactKind.AssistantMessage, ...(model ? { name: clip(model, MAX_NAME) } : {}) });
    const level = autonomyLevelOf(session.settings);
    for (const block of message.content) {
      if (block.type !== 'tool_use' || typeof block.name !== 'string') continue;
      const { tool, mcpServer } = normalizeToolName(block.name);
      facts.push({ ...base, kind: FactKind.ToolCall, name: tool, level, ...(mcpServer ? { detail: mcpServer } : {}) });
      const input = (block.input ?? {}) as Record<string, unknown>;
      facts.push(...toolEffects(base, tool, mcpServer, input));
    }
  }
  const event = text(message.attributes.hookEventName);
  const commands = message.attributes.hookCommands;
  // A run is recorded `executing`, then `completed` or `error`: it counts once, when it has ended.
  if (event && Array.isArray(commands) && message.attributes.hookStatus !== 'executing') {
    const matcher = typeof message.attributes.hookMatcher === 'string' ? message.attributes.hookMatcher : '';
    for (const entry of commands as Array<{ command?: unknown }>) {
      const command = text(entry?.command);
      if (command)
        facts.push({ ...base, kind: FactKind.Hook, name: clip(event, MAX_NAME), detail: clip(matcher, MAX_NAME), command: clip(command, MAX_COMMAND) });
    }
  }
  return facts;
}

function fileFact(base: Pick<Fact, 'at' | 'userId' | 'sessionId'>, kind: FactKind, path: string): Fact {
  const file = fileKind(path);
  return { ...base, kind, name: file.extension, detail: file.language };
}

function toolEffects(base: Pick<Fact, 'at' | 'userId' | 'sessionId'>, tool: string, mcpServer: string | undefined, input: Record<string, unknown>): Fact[] {
  const name = tool.toLowerCase();
  const facts: Fact[] = [];
  if (SKILL_TOOLS.has(name)) {
    const skill = text(input.skill) ?? text(input.name) ?? text(input.command);
    if (skill) facts.push({ ...base, kind: FactKind.Skill, name: clip(skill, MAX_NAME) });
  }
  const path = text(input.file_path) ?? text(input.filePath) ?? text(input.path) ?? text(input.target_file);
  const editorCommand = name === EDITOR_TOOL ? text(input.command) : undefined;
  const file =
    path && (CREATE_TOOLS.has(name) || editorCommand === 'create')
      ? FactKind.FileCreated
      : path && (EDIT_TOOLS.has(name) || editorCommand === 'str_replace' || editorCommand === 'insert')
        ? FactKind.FileEdited
        : undefined;
  if (file && path) facts.push(fileFact(base, file, path));
  const patch = name === 'apply_patch' || name === 'applypatch' ? (text(input.input) ?? text(input.patch)) : undefined;
  if (patch && !path) {
    for (const [, action, patched] of patch.matchAll(PATCH_FILE))
      facts.push(fileFact(base, action === 'Add' ? FactKind.FileCreated : FactKind.FileEdited, patched.trim()));
  }
  const shell = SHELL_TOOLS.has(name) ? (text(input.command) ?? text(input.cmd)) : undefined;
  if (shell) {
    const { commits, pullRequests } = gitEffects(shell);
    for (let i = commits; i > 0; i--) facts.push({ ...base, kind: FactKind.GitCommit });
    for (let i = pullRequests; i > 0; i--) facts.push({ ...base, kind: FactKind.GitPullRequest });
  }
  if (mcpServer && /__create_(?:pull|merge)_request$/i.test(tool)) facts.push({ ...base, kind: FactKind.GitPullRequest });
  return facts;
}

/**
 * The commits and pull requests a shell command line makes: commands whose program is `git` with
 * the subcommand `commit` (`echo "git commit"` and `git log --grep commit` are not), and `gh pr
 * create`, `glab mr create` or `hub pull-request`; read with the shell parser the agent's command
 * policy uses, substitutions included. A line it cannot parse is read where commands start.
 */
export function gitEffects(line: string): { commits: number; pullRequests: number } {
  if (!MAY_COUNT.test(line)) return { commits: 0, pullRequests: 0 };
  let commands: string[][];
  try {
    commands = parseShell(line, 'bash').commands.map((command) => command.words.map((word) => word.value ?? ''));
  } catch {
    return { commits: (line.match(GIT_COMMIT_FALLBACK) ?? []).length, pullRequests: (line.match(PR_FALLBACK) ?? []).length };
  }
  let commits = 0;
  let pullRequests = 0;
  for (const words of commands) {
    const args = unwrapped(words);
    const program = (args[0] ?? '').split('/').pop();
    if (program === 'git' && subcommandOfGit(args) === 'commit') commits += 1;
    if (
      (program === 'gh' && args[1] === 'pr' && args[2] === 'create') ||
      (program === 'glab' && args[1] === 'mr' && args[2] === 'create') ||
      (program === 'hub' && args[1] === 'pull-request')
    ) {
      pullRequests += 1;
    }
  }
  return { commits, pullRequests };
}

/** The words after the wrappers (`sudo -E`, `env A=b`, `time`) in front of a command. */
function unwrapped(words: string[]): string[] {
  let i = 0;
  while (i < words.length && WRAPPERS.has(words[i].split('/').pop() ?? '')) {
    i += 1;
    while (i < words.length && (words[i].startsWith('-') || /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]))) i += 1;
  }
  return words.slice(i);
}

function subcommandOfGit(args: string[]): string | undefined {
  for (let i = 1; i < args.length; i++) {
    if (!args[i].startsWith('-')) return args[i];
    if (GIT_VALUE_OPTIONS.has(args[i])) i += 1;
  }
  return undefined;
}

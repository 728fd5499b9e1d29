import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { AgentTool, ToolContext } from '../../src/agent/tools';

/*
 * A fresh workspace for each test of the agent's file tools: `root` holds `ws` (the workspace) and
 * `outside` (a sibling the tools must not reach). Importing this module registers the hooks that make
 * and remove them; the bindings below always name the current test's folders.
 */
export let root: string;
export let workspace: string;
export let outside: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'agent-tools-')));
  workspace = join(root, 'ws');
  outside = join(root, 'outside');
  mkdirSync(workspace);
  mkdirSync(outside);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

export const context = (): ToolContext => ({
  workspace,
  policy: { commandAllowlist: [], commandDenylist: [], commandBlocklist: [] },
  signal: new AbortController().signal,
});

/** Writes a file of the workspace, with the folders it needs. */
export const write = (path: string, content: string | Buffer) => {
  mkdirSync(dirname(join(workspace, path)), { recursive: true });
  writeFileSync(join(workspace, path), content);
};
export const read = (path: string) => readFileSync(join(workspace, path), 'utf8');
export const run = (tool: AgentTool, input: Record<string, unknown>) => tool.run(input, context());

/** The results a tool gives: content, or an error (its text, or a pattern it matches). */
export const ok = (content: string) => ({ content, isError: false });
export const failure = (content: string | RegExp) => ({ content: typeof content === 'string' ? content : expect.stringMatching(content), isError: true });

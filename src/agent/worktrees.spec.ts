import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { branchOf, Worktrees } from './worktrees';

describe('Worktrees', () => {
  let root: string;
  let workspace: string;
  const sessionId = '0192f0c8-0000-7000-8000-000000000001';
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'agent-worktrees-'));
    workspace = join(root, 'ws');
    mkdirSync(workspace);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', workspace, '-c', 'user.email=d@example.com', '-c', 'user.name=D', ...args], { encoding: 'utf8' });

  it('refuses, saying why, a workspace that is not a git repository with a commit', async () => {
    const worktrees = new Worktrees(workspace, join(root, 'state'));
    expect(await worktrees.forSession(sessionId)).toEqual({ refusal: expect.stringMatching(/runInWorktree.*is not a git repository with a commit/) });
    git('init', '-q');
    expect(await worktrees.forSession(sessionId)).toEqual({ refusal: expect.stringMatching(/not a git repository with a commit/) });
  });

  it('makes the worktree once, on a branch of its own, and finds it again; a worktree folder removed by hand is made again on its branch', async () => {
    git('init', '-q');
    writeFileSync(join(workspace, 'a.txt'), 'a\n');
    git('add', '.');
    git('commit', '-qm', 'init');
    const worktrees = new Worktrees(workspace, join(root, 'state'));
    const made = await worktrees.forSession(sessionId);
    expect(made).toEqual({ path: join(root, 'state', 'worktrees', sessionId) });
    expect(await worktrees.forSession(sessionId)).toEqual(made);
    expect(existsSync(join(root, 'state', 'worktrees', sessionId, 'a.txt'))).toBe(true);
    expect(await worktrees.sessions()).toEqual([sessionId]);
    rmSync(join(root, 'state', 'worktrees', sessionId), { recursive: true });
    git('worktree', 'prune');
    expect(await worktrees.forSession(sessionId)).toEqual(made);
    expect(git('branch', '--list', '--format=%(refname:short)', branchOf(sessionId)).trim()).toBe(branchOf(sessionId));
    await worktrees.remove(sessionId);
    expect(await worktrees.sessions()).toEqual([]);
    expect(git('branch', '--list', branchOf(sessionId)).trim()).toBe('');
  });
});

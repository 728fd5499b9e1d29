import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The branch of a session's worktree. */
export const branchOf = (sessionId: string) => `agent-platform/session-${sessionId}`;

/**
 * Sessions' git worktrees (the organization's `sessionDefaultSettings.runInWorktree`): each session works in a
 * worktree of its own, on a branch of its own made from the workspace's `HEAD`, under the agent's state folder,
 * so that sessions on one computer never change each other's files. A session's worktree goes when the session
 * does; its branch stays while it holds commits that are nowhere else.
 */
export class Worktrees {
  constructor(
    private readonly workspace: string,
    private readonly stateDir: string,
  ) {}

  private get folder(): string {
    return join(this.stateDir, 'worktrees');
  }

  /** The session's worktree, made at its first turn; or why there can be none (a sentence). */
  async forSession(sessionId: string): Promise<{ path: string } | { refusal: string }> {
    const path = join(this.folder, sessionId);
    if (existsSync(path)) return { path };
    const git = (...args: string[]) => run('git', ['-C', this.workspace, ...args], { encoding: 'utf8' });
    try {
      await git('rev-parse', '--verify', '--quiet', 'HEAD^{commit}');
    } catch {
      return {
        refusal:
          `The organization runs each session in a git worktree of its own (sessionDefaultSettings.runInWorktree), and the workspace ${this.workspace} ` +
          'is not a git repository with a commit to start one from. Nothing ran; make it one (git init, a first commit) or ask an admin to turn the setting off.',
      };
    }
    await mkdir(this.folder, { recursive: true });
    const branch = branchOf(sessionId);
    const exists = await git('rev-parse', '--verify', '--quiet', `refs/heads/${branch}`).then(
      () => true,
      () => false,
    );
    try {
      await (exists ? git('worktree', 'add', path, branch) : git('worktree', 'add', '-b', branch, path, 'HEAD'));
    } catch (error) {
      return {
        refusal: `The session's git worktree could not be made (${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}). Nothing ran.`,
      };
    }
    return { path };
  }

  /** The sessions that have a worktree here. */
  async sessions(): Promise<string[]> {
    return existsSync(this.folder) ? (await readdir(this.folder)).filter((name) => /^[0-9a-f-]{36}$/.test(name)) : [];
  }

  /** Removes the worktree of a session that is gone, and its branch unless it holds commits found nowhere else. */
  async remove(sessionId: string): Promise<void> {
    const git = (...args: string[]) => run('git', ['-C', this.workspace, ...args], { encoding: 'utf8' });
    await git('worktree', 'remove', '--force', join(this.folder, sessionId)).catch(() => undefined);
    await git('worktree', 'prune').catch(() => undefined);
    // -d, not -D: a branch with commits merged nowhere stays, for a person to look at.
    await git('branch', '-d', branchOf(sessionId)).catch(() => undefined);
  }
}

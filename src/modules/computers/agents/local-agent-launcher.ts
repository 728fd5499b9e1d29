import { Injectable, Logger } from '@nestjs/common';
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { SecretBox } from '../../../platform/secrets/secret-box';
import { agentTokenContext } from '../domain/computer';
import { COMPUTER_HOME, computerEnvironment } from '../providers/computer-environment';
import { LocalProvider } from '../providers/local.provider';
import { ComputerSandbox } from '../sandbox/computer-sandbox';
import { OutputLines, redactTokens } from './agent-output';

/** The reference agent and the guard preloaded into it, as compiled beside this file (`dist/`). */
export const AGENT_MAIN = join(__dirname, '../../../agent/main.js');
export const ORPHAN_GUARD = join(__dirname, 'orphan-guard.js');

/**
 * The operator's agent settings the agent takes from the server's environment. The model's (`AGENT_MODEL*`, its key
 * among them) only when the agent is not sandboxed: inside, the member's commands could read the agent's own
 * environment, and a sandboxed agent uses its organization's custom models through the platform's relay instead.
 */
const AGENT_SETTINGS = /^AGENT_(CONTEXT_CHARS|WORK_DISABLED_RETRY_MS|WORKTREE_PRUNE_MS)$/;
export const AGENT_MODEL_SETTINGS = /^AGENT_MODEL(_[A-Z_]+)?$/;

/** One computer's agent, as the supervisor asks for it to be started. */
export interface AgentLaunch {
  computerId: string;
  organizationId: string;
  token: string;
  /** This server's address as the agent reaches it. */
  url: string;
}

/**
 * Starts one computer's reference agent: whether it can start at all (its sandbox, its token), and the process
 * itself, in the computer's sandbox with an allowlisted environment and its output in the server's log. What runs
 * where, and when, is the supervisor's.
 */
@Injectable()
export class LocalAgentLauncher {
  // The supervisor's name: one story per agent in the log, whichever class tells it.
  private readonly logger = new Logger('LocalAgentSupervisor');
  /** Computers whose token cannot be decrypted, by the envelope that failed: said once, not at every look. */
  private readonly unreadable = new Map<string, string>();
  /** Computers whose sandbox cannot start, by the reason: said once, not at every look. */
  private readonly unsandboxable = new Map<string, string>();

  constructor(
    private readonly provider: LocalProvider,
    private readonly box: SecretBox,
    private readonly sandbox: ComputerSandbox,
  ) {}

  /** Whether the computer's workspace is on this host (a computer provisioned on another is that host's to run). */
  isHere(computerId: string): boolean {
    return existsSync(this.provider.workspaceOf(computerId));
  }

  /** The computer's token, when its agent can start: null (said once per reason) when its sandbox cannot start or its token cannot be read. */
  async tokenFor(computerId: string, envelope: string): Promise<string | null> {
    const unavailable = await this.sandbox.unavailable(computerId);
    if (unavailable) {
      if (this.unsandboxable.get(computerId) !== unavailable) {
        this.logger.error(
          `The agent of computer ${computerId} does not start: this host cannot sandbox it (${unavailable}); LOCAL_SANDBOX=off would run it unsandboxed`,
        );
        this.unsandboxable.set(computerId, unavailable);
      }
      return null;
    }
    this.unsandboxable.delete(computerId);
    try {
      const token = this.box.decrypt(envelope, agentTokenContext(computerId));
      this.unreadable.delete(computerId);
      return token;
    } catch (error) {
      if (this.unreadable.get(computerId) !== envelope) {
        this.logger.error(
          `The agent of computer ${computerId} cannot start: its stored token cannot be decrypted (${(error as Error).message}); rotating the token gives it a new one`,
        );
        this.unreadable.set(computerId, envelope);
      }
      return null;
    }
  }

  /** Forgets what was said about computers that no longer need an agent here. */
  forgetAllBut(wanted: ReadonlySet<string>): void {
    for (const computerId of this.unreadable.keys()) if (!wanted.has(computerId)) this.unreadable.delete(computerId);
  }

  /**
   * Starts the agent's process; the token goes in its environment, never on its command line (which `ps` shows).
   * Null when the workspace is gone meanwhile, or `cancelled()` says so once the sandbox is ready.
   */
  async spawn(launch: AgentLaunch, cancelled: () => boolean): Promise<ChildProcess | null> {
    const { computerId, organizationId, token, url } = launch;
    const workspace = this.provider.workspaceOf(computerId);
    if (!existsSync(workspace)) return null;
    const stateDir = this.provider.agentStateOf(computerId);
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
    const home = join(workspace, COMPUTER_HOME);
    await this.sandbox.prepare(computerId, [workspace, home, join(home, 'tmp'), stateDir]);
    if (cancelled()) return null;
    const sandboxed = await this.sandbox.enter({
      computerId,
      organizationId,
      workspace,
      command: process.execPath,
      args: ['--require', ORPHAN_GUARD, AGENT_MAIN, '--computer', computerId, '--workspace', workspace],
      cwd: workspace,
      // Hooks come from the computer's own home (~/.agent-platform/settings.json), never from a file organizations share.
      env: computerEnvironment(home, {
        ...agentSettings(!this.sandbox.enabled),
        AGENT_TOKEN: token,
        AGENT_STATE_DIR: stateDir,
        // The organization's sandbox (sandbox.enabled) then nests in the computer's.
        ...(this.sandbox.enabled ? { AGENT_NESTED_SANDBOX: '1' } : {}),
      }),
      writable: [stateDir],
      agent: true,
    });
    sandboxed.env.AGENT_URL = sandboxed.apiUrl ?? url;
    const child = spawn(sandboxed.file, sandboxed.args, {
      cwd: this.sandbox.enabled ? '/' : workspace,
      env: sandboxed.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      // A process group of its own: what is meant for the server's group (a terminal's Ctrl-C) does not reach it,
      // the server stops it in order; and stopping it reaches whatever it started in its group.
      detached: true,
    });
    const disk = child.pid !== undefined ? this.sandbox.watchDisk({ computerId, organizationId, workspace }, child.pid) : null;
    child.once('close', () => {
      disk?.stop();
      void sandboxed.close();
    });
    const redact = (text: string) => redactTokens(text, token);
    for (const [stream, level] of [
      [child.stdout!, 'log'],
      [child.stderr!, 'warn'],
    ] as const) {
      const lines = new OutputLines(redact, (line) => this.logger[level](`[computer ${computerId}] ${line}`));
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => lines.push(chunk));
      stream.on('end', () => lines.end());
    }
    this.logger.log(`The agent of computer ${computerId} started (pid ${child.pid}), for ${url} in ${workspace}`);
    return child;
  }
}

/** The operator's agent settings from the server's environment (the model's only when `withModel`). */
function agentSettings(withModel: boolean): Record<string, string> {
  const passed = Object.entries(process.env).filter(
    (entry): entry is [string, string] => entry[1] !== undefined && (AGENT_SETTINGS.test(entry[0]) || (withModel && AGENT_MODEL_SETTINGS.test(entry[0]))),
  );
  return Object.fromEntries(passed);
}

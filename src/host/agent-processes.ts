import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { OutputLines, redactTokens } from './agent-output';
import { COMPUTER_HOME, computerEnvironment } from './computer-environment';
import type { HostLogger } from './host-log';
import type { HostProvisioner } from './host-provisioner';
import type { HostSandbox } from './host-sandbox';

/** The reference agent and the guard preloaded into it, as compiled beside this file (`dist/`). */
export const AGENT_MAIN = join(__dirname, '../agent/main.js');
export const ORPHAN_GUARD = join(__dirname, 'orphan-guard.js');

/**
 * The operator's agent settings the agent takes from the host's environment. The model's (`AGENT_MODEL*`, its key
 * among them) only when the agent is not sandboxed: inside, the member's commands could read the agent's own
 * environment, and a sandboxed agent uses its organization's custom models through the platform's relay instead.
 */
const AGENT_SETTINGS = /^AGENT_(CONTEXT_CHARS|WORK_DISABLED_RETRY_MS|WORKTREE_PRUNE_MS)$/;
export const AGENT_MODEL_SETTINGS = /^AGENT_MODEL(_[A-Z_]+)?$/;

/** An agent that exits is started again after this long, doubling at each exit up to the maximum. */
const FIRST_RESTART_MS = 1_000;
const MAX_RESTART_MS = 60_000;
/** An agent asked to stop (SIGTERM) that still runs after this long is killed. */
const STOP_GRACE_MS = 5_000;

/** One computer's agent, as it is asked to be started. */
export interface AgentLaunch {
  computerId: string;
  organizationId: string;
  token: string;
  /** What the token came from (a stored envelope, an issue time): another one later means the token was rotated. */
  version: string;
}

export interface AgentProcessesOptions {
  sandbox: HostSandbox;
  /** Where each computer's workspace and agent state are. */
  workspaces: Pick<HostProvisioner, 'workspaceOf' | 'agentStateOf'>;
  logger: HostLogger;
  /** The platform's address as the agents reach it; null while it cannot be reached (no agent starts then). */
  url(): string | null;
  /** True once the owner stops: no agent starts or restarts any more. */
  stopping(): boolean;
}

interface SupervisedAgent extends AgentLaunch {
  child: ChildProcess | null;
  /** Resolves when `child` has exited. */
  exited: Promise<void>;
  startedAt: number;
  restartDelayMs: number;
  restartTimer: NodeJS.Timeout | null;
  retired: boolean;
}

/**
 * The agents' processes on this host, one per computer: each started in its computer's sandbox with an allowlisted
 * environment and its output in the log, restarted with backoff when it exits, stopped in order. Which computers get
 * an agent, and when, is the owner's (the server's supervisor, a worker's reconcile).
 */
export class AgentProcesses {
  private readonly agents = new Map<string, SupervisedAgent>();

  constructor(private readonly options: AgentProcessesOptions) {}

  has(computerId: string): boolean {
    return this.agents.has(computerId);
  }

  /** The `version` of the token the computer's agent runs with, or undefined when it has none here. */
  versionOf(computerId: string): string | undefined {
    return this.agents.get(computerId)?.version;
  }

  computerIds(): string[] {
    return [...this.agents.keys()];
  }

  /** Starts supervising the computer's agent, and its process. */
  async start(launch: AgentLaunch): Promise<void> {
    const agent: SupervisedAgent = {
      ...launch,
      child: null,
      exited: Promise.resolve(),
      startedAt: 0,
      restartDelayMs: FIRST_RESTART_MS,
      restartTimer: null,
      retired: false,
    };
    this.agents.set(launch.computerId, agent);
    await this.run(agent);
  }

  /**
   * Stops supervising the computer's agent and stops its process (SIGTERM: SIGKILL after a grace period). False when
   * it had none here.
   */
  async retire(computerId: string, signal: 'SIGTERM' | 'SIGKILL'): Promise<boolean> {
    const agent = this.agents.get(computerId);
    if (!agent) return false;
    agent.retired = true;
    this.agents.delete(computerId);
    if (agent.restartTimer) clearTimeout(agent.restartTimer);
    const child = agent.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      killGroup(child, signal);
      const escalation = signal === 'SIGKILL' ? null : setTimeout(() => killGroup(child, 'SIGKILL'), STOP_GRACE_MS);
      await agent.exited;
      if (escalation) clearTimeout(escalation);
    }
    return true;
  }

  /** Starts the agent's process and watches it end. */
  private async run(agent: SupervisedAgent): Promise<void> {
    const url = this.options.url();
    // Gone meanwhile: the owner's next look retires the agent.
    if (!url) return;
    const child = await this.spawn(agent, url, () => agent.retired || this.options.stopping());
    if (!child) return;
    agent.child = child;
    agent.startedAt = Date.now();
    agent.exited = new Promise((resolve) => {
      let settled = false;
      const settle = (outcome: string) => {
        if (settled) return;
        settled = true;
        resolve();
        this.onExit(agent, child, outcome);
      };
      child.once('exit', (code, signal) => settle(code !== null ? `exit ${code}` : `killed by ${signal}`));
      child.once('error', (error) => settle(`could not run: ${error.message}`));
    });
  }

  /** A child ended: unless it was stopped on purpose, it is started again after its backoff. */
  private onExit(agent: SupervisedAgent, child: ChildProcess, outcome: string): void {
    const { logger } = this.options;
    if (agent.child !== child) return;
    agent.child = null;
    if (agent.retired || this.options.stopping()) {
      logger.log(`The agent of computer ${agent.computerId} stopped (${outcome})`);
      return;
    }
    // One that ran a good while had a reason of its own to stop: start again from the shortest wait.
    if (Date.now() - agent.startedAt >= MAX_RESTART_MS) agent.restartDelayMs = FIRST_RESTART_MS;
    const delay = agent.restartDelayMs;
    agent.restartDelayMs = Math.min(MAX_RESTART_MS, delay * 2);
    logger.warn(`The agent of computer ${agent.computerId} exited (${outcome}); starting it again in ${delay / 1000} s`);
    agent.restartTimer = setTimeout(() => {
      agent.restartTimer = null;
      if (agent.retired || this.options.stopping()) return;
      this.run(agent).catch((error: Error) => logger.error(`The agent of computer ${agent.computerId} could not be started again: ${error.message}`));
    }, delay);
  }

  /**
   * Starts the agent's process; the token goes in its environment, never on its command line (which `ps` shows).
   * Null when the workspace is gone meanwhile, or `cancelled()` says so once the sandbox is ready.
   */
  private async spawn(launch: AgentLaunch, url: string, cancelled: () => boolean): Promise<ChildProcess | null> {
    const { sandbox, workspaces, logger } = this.options;
    const { computerId, organizationId, token } = launch;
    const workspace = workspaces.workspaceOf(computerId);
    if (!existsSync(workspace)) return null;
    const stateDir = workspaces.agentStateOf(computerId);
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
    const home = join(workspace, COMPUTER_HOME);
    await sandbox.prepare(computerId, [workspace, home, join(home, 'tmp'), stateDir]);
    if (cancelled()) return null;
    const sandboxed = await sandbox.enter({
      computerId,
      organizationId,
      workspace,
      command: process.execPath,
      args: ['--require', ORPHAN_GUARD, AGENT_MAIN, '--computer', computerId, '--workspace', workspace],
      cwd: workspace,
      // Hooks come from the computer's own home (~/.agent-platform/settings.json), never from a file organizations share.
      env: computerEnvironment(home, {
        ...agentSettings(!sandbox.enabled),
        AGENT_TOKEN: token,
        AGENT_STATE_DIR: stateDir,
        // The organization's sandbox (sandbox.enabled) then nests in the computer's.
        ...(sandbox.enabled ? { AGENT_NESTED_SANDBOX: '1' } : {}),
      }),
      writable: [stateDir],
      agent: true,
    });
    sandboxed.env.AGENT_URL = sandboxed.apiUrl ?? url;
    const child = spawn(sandboxed.file, sandboxed.args, {
      cwd: sandbox.enabled ? '/' : workspace,
      env: sandboxed.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      // A process group of its own: what is meant for the host process's group (a terminal's Ctrl-C) does not reach
      // it, the host process stops it in order; and stopping it reaches whatever it started in its group.
      detached: true,
    });
    const disk = child.pid !== undefined ? sandbox.watchDisk({ computerId, organizationId, workspace }, child.pid) : null;
    child.once('close', () => {
      disk?.stop();
      void sandboxed.close();
    });
    const redact = (text: string) => redactTokens(text, token);
    for (const [stream, level] of [
      [child.stdout!, 'log'],
      [child.stderr!, 'warn'],
    ] as const) {
      const lines = new OutputLines(redact, (line) => logger[level](`[computer ${computerId}] ${line}`));
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => lines.push(chunk));
      stream.on('end', () => lines.end());
    }
    logger.log(`The agent of computer ${computerId} started (pid ${child.pid}), for ${url} in ${workspace}`);
    return child;
  }
}

/** The operator's agent settings from the host's environment (the model's only when `withModel`). */
function agentSettings(withModel: boolean): Record<string, string> {
  const passed = Object.entries(process.env).filter(
    (entry): entry is [string, string] => entry[1] !== undefined && (AGENT_SETTINGS.test(entry[0]) || (withModel && AGENT_MODEL_SETTINGS.test(entry[0]))),
  );
  return Object.fromEntries(passed);
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

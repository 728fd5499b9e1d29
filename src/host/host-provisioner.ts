import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { COMPUTER_HOME, computerEnvironment, findOnPath } from './computer-environment';
import type { HostSandbox } from './host-sandbox';
import { detectPackageManager, KNOWN_LOCKFILES } from './package-managers';
import { cloneDirectoryNames, locateRepo } from './repo-location';
import { runCommand } from './run-command';
import { StepContext, StepFailure, StepId, StepResult } from './step';
import type { QuotaWatch } from './workspace-quota';

/** What a host's provisioning is told by whoever runs it (the server's settings, or a worker's). */
export interface HostProvisionerSettings {
  /** Where the computers' workspaces are, one folder each (`COMPUTERS_DIR`). */
  computersDir: string;
  /** The folder local repositories may be cloned from (`LOCAL_REPOS_DIR`); none means no local repository. */
  localReposDir: string | undefined;
  /** Whether package installs run their packages' scripts (`LOCAL_INSTALL_SCRIPTS`). */
  installScripts: boolean;
  /** A workspace's limit in MiB (`LOCAL_WORKSPACE_MAX_MB`), named in the step's error. */
  workspaceMaxMb: number;
  /** This host as a step's error names it to a member: "the server's host", or "its worker's host". */
  hostName: string;
}

/** The end of a failed command's output that goes into the step's `error`. */
const ERROR_TAIL = 600;

/** Beside the workspaces (no computer id looks like it): the agents' own files, kept out of the projects they work on. */
export const AGENT_STATE_DIR = '.agent-state';

/**
 * Beside the workspaces, the server's own: which command each computer's step is running, so an instance taking
 * the step over can stop one its dead predecessor left. Never in the workspace, where the computer could forge it.
 */
const RUNNING_COMMANDS_DIR = '.running-commands';

/**
 * Provisions managed computers on this host: a computer is a workspace directory, `computersDir/<computerId>`, with
 * its repos cloned by git and their dependencies installed, every command run in the computer's sandbox. Every step
 * is safe to run again from the start, since a process that dies mid-step leaves it to another.
 */
export class HostProvisioner {
  constructor(
    private readonly settings: HostProvisionerSettings,
    private readonly sandbox: HostSandbox,
  ) {}

  workspaceOf(computerId: string): string {
    return join(this.settings.computersDir, computerId);
  }

  /** Where the computer's agent keeps its own files (transcripts for hooks): outside its workspace. */
  agentStateOf(computerId: string): string {
    return join(this.settings.computersDir, AGENT_STATE_DIR, computerId);
  }

  private runningCommandFile(computerId: string): string {
    return join(this.settings.computersDir, RUNNING_COMMANDS_DIR, `${computerId}.json`);
  }

  async runStep(step: StepId, context: StepContext): Promise<StepResult> {
    await this.stopLeftoverCommand(context);
    switch (step) {
      case StepId.CreateComputer: {
        const unavailable = await this.sandbox.unavailable(context.computer.id);
        if (unavailable) {
          throw new StepFailure(
            `This host cannot sandbox the computer: ${unavailable}. Managed local computers run members' code only in a sandbox ` +
              `(the operator may set LOCAL_SANDBOX=off, which trusts every member with ${this.settings.hostName}).`,
          );
        }
        await mkdir(this.workspaceOf(context.computer.id), { recursive: true, mode: 0o700 });
        await context.log(
          `Workspace ready at ${this.workspaceOf(context.computer.id)}${this.sandbox.enabled ? ', sandboxed' : ' (LOCAL_SANDBOX is off: not sandboxed)'}.`,
        );
        return {};
      }
      case StepId.CloneRepos:
        return { clonedRepoDirectories: await this.cloneRepos(context) };
      case StepId.InstallDependencies:
        await this.installDependencies(context);
        return {};
    }
  }

  async teardown(computerId: string): Promise<void> {
    await rm(this.runningCommandFile(computerId), { force: true });
    await rm(`${this.runningCommandFile(computerId)}.gitconfig`, { force: true });
    for (const directory of [this.workspaceOf(computerId), this.agentStateOf(computerId)]) {
      const inside = relative(this.settings.computersDir, directory);
      if (!inside || inside.startsWith('..') || inside === AGENT_STATE_DIR || inside === RUNNING_COMMANDS_DIR)
        throw new Error(`Refusing to remove ${directory}: not a computer's folder in ${this.settings.computersDir}`);
      await rm(directory, { recursive: true, force: true });
    }
  }

  /** Each repo is cloned beside its final place and moved there when complete, so a re-run skips finished clones. */
  private async cloneRepos(context: StepContext): Promise<string[]> {
    const workspace = this.workspaceOf(context.computer.id);
    await mkdir(workspace, { recursive: true, mode: 0o700 });
    const names = cloneDirectoryNames(context.computer.repos);
    const directories: string[] = [];
    for (const [i, repo] of context.computer.repos.entries()) {
      const target = join(workspace, names[i]);
      directories.push(target);
      if (existsSync(join(target, '.git'))) {
        await context.log(`${repo} is already cloned in ${target}.`);
        continue;
      }
      // Checked again at run time: the operator may have narrowed LOCAL_REPOS_DIR since creation.
      const location = locateRepo(repo, this.settings.localReposDir);
      if ('error' in location) throw new StepFailure(`repos[${i}] ${location.error}`);
      const partial = join(workspace, `.partial-${names[i]}`);
      await rm(partial, { recursive: true, force: true });
      const source = location.kind === 'local' ? location.path : location.url;
      // A local repository is visible to the clone, read-only, and trusted although another user owns it (git
      // reads safe.directory only from a global configuration, which the clone's upload-pack keeps).
      const local = location.kind === 'local' ? location.path : null;
      // Written in the server's own folder, shown to the clone read-only: never where the computer could plant a link.
      const env = this.gitEnvironment();
      const readOnly = local ? [local] : [];
      if (local) {
        env.GIT_CONFIG_GLOBAL = `${this.runningCommandFile(context.computer.id)}.gitconfig`;
        await mkdir(dirname(env.GIT_CONFIG_GLOBAL), { recursive: true, mode: 0o711 });
        await writeFile(env.GIT_CONFIG_GLOBAL, `[safe]\n\tdirectory = ${local}\n\tdirectory = ${join(local, '.git')}\n`, { mode: 0o644 });
        await chmod(env.GIT_CONFIG_GLOBAL, 0o644);
        readOnly.push(env.GIT_CONFIG_GLOBAL);
      }
      try {
        await this.run(context, 'git', ['clone', '--no-hardlinks', '--', source, partial], workspace, env, readOnly);
      } finally {
        if (local) await rm(env.GIT_CONFIG_GLOBAL!, { force: true });
      }
      await rm(target, { recursive: true, force: true });
      await rename(partial, target);
    }
    return directories;
  }

  private async installDependencies(context: StepContext): Promise<void> {
    const workspace = this.workspaceOf(context.computer.id);
    const names = cloneDirectoryNames(context.computer.repos);
    for (const name of names) {
      const directory = join(workspace, name);
      const install = detectPackageManager(await readdir(directory));
      if (!install) {
        await context.log(`${directory}: no lockfile (looked for ${KNOWN_LOCKFILES.join(', ')}); nothing to install.`);
        continue;
      }
      const scriptsOff = !this.settings.installScripts && install.withoutScripts;
      await context.log(
        `${directory}: ${install.lockfile} found, installing with ${install.command}` +
          (scriptsOff ? ' without running package scripts (LOCAL_INSTALL_SCRIPTS is off).' : '.'),
      );
      const args = scriptsOff ? [...install.args, ...(scriptsOff.args ?? [])] : install.args;
      const env = { CI: 'true', ...(scriptsOff ? scriptsOff.env : {}) };
      await this.run(context, install.command, args, directory, env);
    }
  }

  /** Runs a command, logs it with its output, and fails the step on a non-zero exit. */
  private async run(context: StepContext, command: string, args: string[], cwd: string, env: Record<string, string>, readOnly: string[] = []): Promise<void> {
    const line = `$ ${[command, ...args].join(' ')}`;
    const { id } = context.computer;
    if (!findOnPath(command)) {
      await context.log(`${line}\n${command} is not installed on this host.`);
      throw new StepFailure(`${command} is not installed on ${this.settings.hostName}, so this step cannot run.`);
    }
    const workspace = this.workspaceOf(id);
    const home = join(workspace, COMPUTER_HOME);
    await this.sandbox.prepare(id, [workspace, home, join(home, 'tmp')]);
    const sandboxed = await this.sandbox.enter({
      computerId: id,
      organizationId: context.computer.organizationId,
      workspace,
      command,
      args,
      cwd,
      env: computerEnvironment(home, env),
      readOnly,
    });
    let result;
    let disk: QuotaWatch | null = null;
    try {
      result = await runCommand(sandboxed.file, sandboxed.args, {
        cwd: this.sandbox.enabled ? '/' : cwd,
        env: sandboxed.env,
        signal: context.signal,
        onSpawn: (pid) => {
          disk = this.sandbox.watchDisk({ computerId: id, organizationId: context.computer.organizationId, workspace }, pid);
          return this.recordCommand(id, pid);
        },
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        throw new StepFailure(`${sandboxed.file} is not installed on ${this.settings.hostName}, so this step cannot run.`);
      throw error;
    } finally {
      (disk as QuotaWatch | null)?.stop();
      await sandboxed.close();
    }
    await rm(this.runningCommandFile(id), { force: true });
    const over = (disk as QuotaWatch | null)?.exceeded();
    if (over) {
      await context.log(`${line}  (in ${cwd})\n${result.output.trimEnd()}\n[stopped: the workspace reached ${Math.round(over / 1024 / 1024)} MiB]`);
      throw new StepFailure(
        `${command} ${args[0]} was stopped: the workspace grew past its limit of ${this.settings.workspaceMaxMb} MiB (LOCAL_WORKSPACE_MAX_MB).`,
      );
    }
    const outcome = result.exitCode === 0 ? 'exit 0' : result.signal ? `killed by ${result.signal}` : `exit ${result.exitCode}`;
    await context.log(`${line}  (in ${cwd})\n${result.output.trimEnd()}\n[${outcome} after ${(result.durationMs / 1000).toFixed(1)} s]`);
    if (result.exitCode !== 0) {
      const tail = result.output.trim().slice(-ERROR_TAIL);
      throw new StepFailure(`${command} ${args[0]} failed (${outcome})${tail ? `: ${tail}` : ''}`);
    }
  }

  /**
   * Unsandboxed (LOCAL_SANDBOX=off), a command runs in its own process group, so killing only the server leaves it
   * running: the instance that takes the step over stops that group first. (A sandbox dies with its server.)
   */
  private async stopLeftoverCommand(context: StepContext): Promise<void> {
    const file = this.runningCommandFile(context.computer.id);
    let recorded: { pid: number; startTime: string };
    try {
      recorded = JSON.parse(await readFile(file, 'utf8')) as { pid: number; startTime: string };
    } catch {
      return;
    }
    // The leader may have died (an install's npm dies on its dead server's pipe) while its scripts run on. Linux never
    // reuses a pid as long as a group of that id has members, so a live process with that pid but another start time
    // means the group is gone and the pid is someone else's; otherwise the group is ours.
    const leaderStart = await processStartTime(recorded.pid);
    if (leaderStart === null || leaderStart === recorded.startTime) {
      try {
        process.kill(-recorded.pid, 'SIGKILL');
        await context.log(`Stopped a command (pid ${recorded.pid}) left running by an instance that stopped mid-step.`);
      } catch {
        // The group has ended by itself.
      }
    }
    await rm(file, { force: true });
  }

  private async recordCommand(computerId: string, pid: number): Promise<void> {
    const startTime = await processStartTime(pid);
    if (!startTime) return;
    await mkdir(join(this.settings.computersDir, RUNNING_COMMANDS_DIR), { recursive: true, mode: 0o700 });
    await writeFile(this.runningCommandFile(computerId), JSON.stringify({ pid, startTime }), { mode: 0o600 });
  }

  /** git never prompts, never runs a transport other than these, and trusts new SSH hosts once. */
  private gitEnvironment(): Record<string, string> {
    return {
      GIT_ALLOW_PROTOCOL: this.settings.localReposDir ? 'https:http:ssh:git:file' : 'https:http:ssh:git',
      GIT_SSH_COMMAND: 'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new',
    };
  }
}

/** A process's start time (clock ticks since boot) from /proc, or null where there is no /proc or no such process. */
async function processStartTime(pid: number): Promise<string | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces); starttime is field 22, the 20th after it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

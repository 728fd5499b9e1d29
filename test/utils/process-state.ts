import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { until } from './polling';

/** The built agent, as the server starts it for a managed `local` computer. */
const AGENT_MAIN = join(__dirname, '..', '..', 'dist', 'agent', 'main.js');

/** True while the process runs (a zombie, dead but not reaped yet, counts as gone). */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/** Waits up to a second for the process to be gone. */
export async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 20 && running(pid); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  return !running(pid);
}

/** The running agent processes of a computer, found as `ps` would: by their command line. */
export function agentPids(computerId: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const at = args.indexOf('--computer');
    // The agent itself, not the sandbox (bwrap) that runs it with the same arguments.
    if (args[0] === 'bwrap') continue;
    if (args.includes(AGENT_MAIN) && at >= 0 && args[at + 1] === computerId && running(Number(entry))) pids.push(Number(entry));
  }
  return pids;
}

export const commandLineOf = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');

export function environmentOf(pid: number): Record<string, string> {
  const env: Record<string, string> = {};
  let environ: string;
  try {
    environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return env; // gone meanwhile
  }
  for (const pair of environ.split('\0')) {
    const at = pair.indexOf('=');
    if (at > 0) env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return env;
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces): stat(5)'s field 3 is index 0. */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

export function parentOf(pid: number): number {
  return Number(statFields(pid)[1]);
}

/** CPU time a process has spent (user and system), in milliseconds: what it did, however busy the machine was. */
export function cpuMillisOf(pid: number): number {
  const fields = statFields(pid);
  // utime and stime, fields 14 and 15 of stat(5), in clock ticks of 10 ms on Linux.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * CPU time the children a process has waited for have spent (user and system, with their own waited-for children), in
 * milliseconds: what the programs it ran (git, say) did, however busy the machine was.
 */
export function childrenCpuMillisOf(pid: number): number {
  const fields = statFields(pid);
  // cutime and cstime, fields 16 and 17 of stat(5), in clock ticks of 10 ms on Linux.
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/** A process's parent, its parent's parent ... up to init. */
export function ancestorsOf(pid: number): number[] {
  const ancestors: number[] = [];
  for (let parent = parentOf(pid); parent > 1; parent = parentOf(parent)) ancestors.push(parent);
  return ancestors;
}

/** The command lines of the running processes that descend from `pid` (its children, theirs ...). */
export function commandLinesUnder(pid: number): string[][] {
  const found: string[][] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (ancestorsOf(Number(entry)).includes(pid)) found.push(commandLineOf(Number(entry)));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** The uid a process runs as, and its PID namespace. */
export const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
export const pidNamespaceOf = (pid: number) => readlinkSync(`/proc/${pid}/ns/pid`);

/** The one agent process of the computer, once there is exactly one. */
export async function theAgent(computerId: string, what = `the agent of ${computerId}`): Promise<number> {
  const [pid] = await until(
    () => agentPids(computerId),
    (pids) => pids.length === 1,
    what,
  );
  return pid;
}

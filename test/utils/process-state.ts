import { readFileSync } from 'node:fs';

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

import { execFile } from 'node:child_process';

/** How often a running command's workspace is measured. */
export const QUOTA_CHECK_MS = 2_000;

/** A workspace being watched while a command runs in it. */
export interface QuotaWatch {
  /** The size (bytes) that took the workspace past its limit, once it has; null while within it. */
  exceeded(): number | null;
  stop(): void;
}

/**
 * Watches a workspace's disk use while the process group `pid` leads runs in it: past `limitBytes`, the group is
 * killed and `onExceeded` is told. Measured with `du` (apparent sizes would miss sparse files; blocks are what fills
 * the disk), one measure at a time.
 */
export function watchWorkspace(workspace: string, limitBytes: number, pid: number, onExceeded: (bytes: number) => void): QuotaWatch {
  let over: number | null = null;
  let measuring = false;
  const timer = setInterval(() => {
    if (measuring || over !== null) return;
    measuring = true;
    execFile('du', ['-s', '-x', '-B1', workspace], { timeout: QUOTA_CHECK_MS * 5 }, (_error, stdout) => {
      measuring = false;
      const bytes = Number.parseInt(stdout, 10);
      if (!Number.isFinite(bytes) || bytes <= limitBytes || over !== null) return;
      over = bytes;
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Already ended.
      }
      onExceeded(bytes);
    });
  }, QUOTA_CHECK_MS);
  timer.unref();
  return { exceeded: () => over, stop: () => clearInterval(timer) };
}

import { execFile } from 'node:child_process';

const MiB = 1024 * 1024;
/** `du` walks every file: a large workspace is measured at most this often, and heartbeats report the last figure. */
export const DISK_USE_EVERY_MS = 60_000;

/**
 * The disk the worker's computers take (their folder, blocks on its file system as `du` counts them), in MiB, for its
 * heartbeats' `usage.diskMb`. Measured in the background, one walk at a time; 0 until the first walk ends (or when the
 * folder does not exist yet).
 */
export class DiskUse {
  private lastMb = 0;
  private measuredAt = -Infinity;
  private measuring: Promise<void> | null = null;

  constructor(
    private readonly dir: string,
    private readonly everyMs = DISK_USE_EVERY_MS,
  ) {}

  /** The last figure; starts a new walk when it is older than `everyMs`. */
  mb(now = Date.now()): number {
    if (!this.measuring && now - this.measuredAt >= this.everyMs) void this.measure();
    return this.lastMb;
  }

  /** Walks the folder now (resolves when the figure is updated); a walk under way is shared. */
  measure(): Promise<void> {
    this.measuring ??= new Promise<void>((resolve) => {
      execFile('du', ['-s', '-x', '-B1', this.dir], { timeout: this.everyMs }, (_error, stdout) => {
        // A file removed mid-walk makes du exit 1 with a total still printed; a folder not made yet prints nothing.
        const bytes = Number.parseInt(stdout, 10);
        this.lastMb = Number.isFinite(bytes) ? Math.round(bytes / MiB) : 0;
        this.measuredAt = Date.now();
        this.measuring = null;
        resolve();
      });
    });
    return this.measuring;
  }
}

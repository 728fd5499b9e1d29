/** Where a worker is in its life: `online` while its lease runs; every other status is final (it registers anew). */
export enum WorkerStatus {
  Online = 'online',
  /** It went away without a word: its lease ran out. */
  Lost = 'lost',
  /** Its enrollment token was revoked. */
  Revoked = 'revoked',
  /** An owner or manager removed it. */
  Evicted = 'evicted',
  /** It said it was leaving (shut down). */
  Left = 'left',
}
export const WORKER_STATUSES = Object.values(WorkerStatus);

/** What a worker can hold: computers at once, and the machine's size (shown, and for choosing between workers). */
export interface WorkerCapacity {
  computers: number;
  cpus: number;
  memoryMb: number;
  diskMb: number;
}

/** What a worker reported in its last heartbeat. */
export interface WorkerUsage {
  cpuPercent: number;
  memoryMb: number;
  diskMb: number;
}

/** Most computers any worker may hold, whatever it says. */
export const MAX_COMPUTERS_PER_WORKER = 256;

/** The names of the pools and workers computers run on, by id. */
export interface PlacementNames {
  pools: Map<string, string>;
  workers: Map<string, { name: string; poolId: string; poolName: string }>;
}

/** A computer waiting for a worker: the pool it asks for (null: any of its organization's) and the labels it needs. */
export interface WaitingComputer {
  id: string;
  poolId: string | null;
  labels: readonly string[];
}

/** An online worker as placement weighs it. */
export interface WorkerRoom {
  id: string;
  poolId: string;
  labels: readonly string[];
  /** Most computers it may hold: its capacity, capped by its pool. */
  room: number;
  /** Computers placed on it now. */
  held: number;
  registeredAt: Date;
}

/**
 * The worker a computer goes to: one of its pool (any pool when it names none) that has every label it needs and room
 * for one more; of those, the one holding fewest, then the longest registered. Null when none fits. `held` of the
 * chosen worker is counted up, so a batch of computers spreads over the workers.
 */
export function chooseWorker(computer: WaitingComputer, workers: WorkerRoom[]): WorkerRoom | null {
  let best: WorkerRoom | null = null;
  for (const worker of workers) {
    if (computer.poolId !== null && worker.poolId !== computer.poolId) continue;
    if (worker.held >= worker.room) continue;
    if (!computer.labels.every((label) => worker.labels.includes(label))) continue;
    if (!best || worker.held < best.held || (worker.held === best.held && worker.registeredAt < best.registeredAt)) best = worker;
  }
  if (best) best.held += 1;
  return best;
}

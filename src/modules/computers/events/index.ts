import type { ComputerStatus } from '../domain/computer-status';

/** A computer was created (a BYOM machine registered, or a managed one whose provisioning starts). */
export interface ComputerCreatedData {
  computerId: string;
  name: string;
  provider: string;
  ownerId: string;
  status: ComputerStatus;
}

/**
 * A computer's status or one of its provisioning steps changed: `step` names the step that moved
 * (with its error when it failed); `from` equals `to` when only the step moved.
 */
export interface ComputerStatusChangedData {
  computerId: string;
  provider: string;
  from: ComputerStatus;
  to: ComputerStatus;
  step: { stepId: string; status: string; error: string | null } | null;
}

/** A computer was deleted: its agent token stops working and its agent (a `local` one) is stopped. */
export interface ComputerDeletedData {
  computerId: string;
  name: string;
  provider: string;
  ownerId: string;
}

/**
 * A managed computer created for worker pools moved: placed on a worker (`placed`), or taken off one whose session
 * ended (`worker_left`; it waits to be placed again).
 */
export interface ComputerPlacementChangedData {
  computerId: string;
  workerId: string | null;
  poolId: string | null;
  reason: 'placed' | 'worker_left';
}

/** A worker pool as its events show it. */
export interface WorkerPoolData {
  poolId: string;
  name: string;
  maxComputersPerWorker: number | null;
  allowUnsandboxed: boolean;
}

/** An enrollment token as its events show it (never the token). */
export interface EnrollmentTokenData {
  poolId: string;
  tokenId: string;
  name: string;
  prefix: string;
  expiresAt: number | null;
}

/** A worker registered into a pool. */
export interface WorkerJoinedData {
  workerId: string;
  poolId: string;
  name: string;
  hostname: string;
  labels: string[];
  capacity: { computers: number; cpus: number; memoryMb: number; diskMb: number };
  sandboxed: boolean;
  version: string;
}

/** A worker's session ended: it left, its lease ran out (`lost`), its token was revoked, or it was evicted. */
export interface WorkerLeftData {
  workerId: string;
  poolId: string;
  name: string;
  reason: 'left' | 'lost' | 'revoked' | 'evicted';
}

declare module '../../../platform/events/event' {
  interface EventDataMap {
    'computer.created': ComputerCreatedData;
    'computer.status_changed': ComputerStatusChangedData;
    'computer.deleted': ComputerDeletedData;
    'computer.placement_changed': ComputerPlacementChangedData;
    'worker_pool.created': WorkerPoolData;
    'worker_pool.updated': WorkerPoolData;
    'worker_pool.deleted': WorkerPoolData;
    'enrollment_token.created': EnrollmentTokenData;
    'enrollment_token.revoked': EnrollmentTokenData;
    'worker.joined': WorkerJoinedData;
    'worker.left': WorkerLeftData;
  }
}

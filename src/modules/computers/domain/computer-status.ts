/** Spec: a computer's status. */
export enum ComputerStatus {
  /** A managed computer whose provisioning steps are not all done. */
  Provisioning = 'provisioning',
  /** Ready for its agent: a registered BYOM machine, or a managed one whose steps all completed. */
  Active = 'active',
  /** A provisioning step failed; retry or delete the computer. */
  Error = 'error',
}

export const COMPUTER_STATUSES = Object.values(ComputerStatus);

/** What moves a computer from one status to another. */
export enum ComputerTrigger {
  ByomRegistered = 'byomRegistered',
  ManagedCreated = 'managedCreated',
  StepsCompleted = 'stepsCompleted',
  StepFailed = 'stepFailed',
  Retried = 'retried',
  /** Its worker's session ended: provisioned again elsewhere (an error stays an error, to be retried). */
  WorkerLost = 'workerLost',
  /** No worker of its pool had room within WORKER_PLACEMENT_TIMEOUT_MS. */
  PlacementTimedOut = 'placementTimedOut',
}

/** The status machine as data; `null` is "no computer yet". */
export const COMPUTER_TRANSITIONS: Readonly<Record<ComputerTrigger, ReadonlyArray<[ComputerStatus | null, ComputerStatus]>>> = {
  [ComputerTrigger.ByomRegistered]: [[null, ComputerStatus.Active]],
  [ComputerTrigger.ManagedCreated]: [[null, ComputerStatus.Provisioning]],
  [ComputerTrigger.StepsCompleted]: [[ComputerStatus.Provisioning, ComputerStatus.Active]],
  [ComputerTrigger.StepFailed]: [[ComputerStatus.Provisioning, ComputerStatus.Error]],
  [ComputerTrigger.Retried]: [[ComputerStatus.Error, ComputerStatus.Provisioning]],
  [ComputerTrigger.WorkerLost]: [
    [ComputerStatus.Active, ComputerStatus.Provisioning],
    [ComputerStatus.Provisioning, ComputerStatus.Provisioning],
    [ComputerStatus.Error, ComputerStatus.Error],
  ],
  [ComputerTrigger.PlacementTimedOut]: [[ComputerStatus.Provisioning, ComputerStatus.Error]],
};

/** The status `trigger` leads to from `from`, or null when the machine forbids the move. */
export function nextStatus(trigger: ComputerTrigger, from: ComputerStatus | null): ComputerStatus | null {
  return COMPUTER_TRANSITIONS[trigger].find(([source]) => source === from)?.[1] ?? null;
}

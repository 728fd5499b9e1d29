import { StepId } from '../../../host/step';

/**
 * A provisioning step's status: pending → running when an instance claims it; running → running when another
 * instance takes over a claim whose lease ran out; running → completed or failed; failed → pending on retry (with
 * every later step, which never ran). The repository's statements make these moves and no others.
 */
export enum StepStatus {
  Pending = 'pending',
  Running = 'running',
  Completed = 'completed',
  Failed = 'failed',
}

export const STEP_STATUSES = Object.values(StepStatus);

export { StepId };

export const STEP_IDS = Object.values(StepId);

export const STEP_NAMES: Readonly<Record<StepId, string>> = {
  [StepId.CreateComputer]: 'Create the computer',
  [StepId.CloneRepos]: 'Clone repositories',
  [StepId.InstallDependencies]: 'Install dependencies',
};

/** The steps a new managed computer gets. */
export function planSteps(input: { repos: readonly string[]; autoInstallDeps: boolean }): StepId[] {
  const steps = [StepId.CreateComputer];
  if (input.repos.length > 0) steps.push(StepId.CloneRepos);
  if (input.autoInstallDeps && input.repos.length > 0) steps.push(StepId.InstallDependencies);
  return steps;
}

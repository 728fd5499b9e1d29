import { StepId } from '../domain/provisioning-step';

/** What a provider needs to run one step of a computer. */
export interface StepContext {
  computer: { id: string; organizationId: string; repos: readonly string[]; autoInstallDeps: boolean };
  /** Aborted when the step times out, its claim is lost, or the instance stops. */
  signal: AbortSignal;
  /** Records a line of the step's output in the computer's provisioning log session. */
  log(text: string): Promise<void>;
}

export interface StepResult {
  /** Set by the clone step: where each repo is, in `repos` order. */
  clonedRepoDirectories?: string[];
}

/** A step that failed in a way worth telling the user (shown as the step's `error`). */
export class StepFailure extends Error {}

/**
 * A managed compute provider: prepares computers step by step. Every step must be safe to run
 * again from the start, since an instance that dies mid-step leaves it to another.
 */
export abstract class ComputeProvider {
  abstract readonly type: string;
  abstract runStep(step: StepId, context: StepContext): Promise<StepResult>;
  /** Removes everything the provider made for the computer. */
  abstract teardown(computerId: string): Promise<void>;
}

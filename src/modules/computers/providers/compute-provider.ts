import { StepContext, StepId, StepResult } from '../../../host/step';

export { StepFailure } from '../../../host/step';
export type { StepContext, StepResult } from '../../../host/step';

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

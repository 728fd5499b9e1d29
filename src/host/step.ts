/**
 * The phases of a managed computer, in order. A computer has `create-computer` always, and the
 * others when its body asks for them (repos, autoInstallDeps).
 */
export enum StepId {
  CreateComputer = 'create-computer',
  CloneRepos = 'clone-repos',
  InstallDependencies = 'install-dependencies',
}

/** What a host needs to run one step of a computer. */
export interface StepContext {
  computer: { id: string; organizationId: string; repos: readonly string[]; autoInstallDeps: boolean };
  /** Aborted when the step times out, its claim is lost, or the process stops. */
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

import { ComputerStatus, ComputerTrigger, nextStatus } from './computer-status';
import { planSteps, StepId } from './provisioning-step';

describe('computer status machine', () => {
  it('creates byom computers active and managed ones provisioning', () => {
    expect(nextStatus(ComputerTrigger.ByomRegistered, null)).toBe(ComputerStatus.Active);
    expect(nextStatus(ComputerTrigger.ManagedCreated, null)).toBe(ComputerStatus.Provisioning);
  });

  it('moves provisioning to active or error, and only error back to provisioning', () => {
    expect(nextStatus(ComputerTrigger.StepsCompleted, ComputerStatus.Provisioning)).toBe(ComputerStatus.Active);
    expect(nextStatus(ComputerTrigger.StepFailed, ComputerStatus.Provisioning)).toBe(ComputerStatus.Error);
    expect(nextStatus(ComputerTrigger.Retried, ComputerStatus.Error)).toBe(ComputerStatus.Provisioning);
    expect(nextStatus(ComputerTrigger.Retried, ComputerStatus.Active)).toBeNull();
    expect(nextStatus(ComputerTrigger.StepFailed, ComputerStatus.Active)).toBeNull();
  });
});

describe('planSteps', () => {
  it('adds clone and install phases only when there is something to clone and install', () => {
    expect(planSteps({ repos: [], autoInstallDeps: true })).toEqual([StepId.CreateComputer]);
    expect(planSteps({ repos: ['r'], autoInstallDeps: false })).toEqual([StepId.CreateComputer, StepId.CloneRepos]);
    expect(planSteps({ repos: ['r'], autoInstallDeps: true })).toEqual([StepId.CreateComputer, StepId.CloneRepos, StepId.InstallDependencies]);
  });
});

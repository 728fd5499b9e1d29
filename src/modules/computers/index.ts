export { ComputersModule } from './computers.module';
export { ComputerCreation } from './computer-creation.service';
export { ComputerUpdates } from './computer-updates.service';
export { ComputerViews } from './computer-views.service';
export { FailedProvisioningRecorder } from './failed-provisioning-recorder.service';
export type { ComputerView, StepView } from './domain/views';
export { ComputerStatus } from './domain/computer-status';
export * from './events';
export { StepId } from './domain/provisioning-step';

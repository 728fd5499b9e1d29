export { ComputersModule } from './computers.module';
export { ComputersService } from './computers.service';
export type { ComputerView, StepView } from './domain/views';
export { ComputerStatus } from './domain/computer-status';
export * from './events';
export { StepId } from './domain/provisioning-step';

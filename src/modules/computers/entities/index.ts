export { ComputerEntity } from './computer.entity';
export { ProvisioningStepEntity } from './provisioning-step.entity';

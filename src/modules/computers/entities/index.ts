export { ComputerEntity } from './computer.entity';
export { ProvisioningStepEntity } from './provisioning-step.entity';
export { WorkerPoolEntity } from './worker-pool.entity';
export { WorkerEnrollmentTokenEntity } from './worker-enrollment-token.entity';
export { WorkerEntity } from './worker.entity';

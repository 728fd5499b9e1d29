export { DEFAULT_JITTER, DEFAULT_SHUTDOWN_MS, JobDefinition, JobHandle, JobRunner, JobStats, jitteredDelay } from './job-runner';
export { JobsModule } from './jobs.module';

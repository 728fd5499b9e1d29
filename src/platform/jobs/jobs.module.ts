import { Global, Module } from '@nestjs/common';
import { JobRunner } from './job-runner';

/** The one runner of background jobs (see JobRunner). */
@Global()
@Module({ providers: [JobRunner], exports: [JobRunner] })
export class JobsModule {}

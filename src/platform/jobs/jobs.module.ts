import { Global, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { JobRunner } from './job-runner';

/** The one runner of background jobs (see JobRunner), its ticks timed by `@nestjs/schedule`. */
@Global()
@Module({ imports: [ScheduleModule.forRoot()], providers: [JobRunner], exports: [JobRunner] })
export class JobsModule {}

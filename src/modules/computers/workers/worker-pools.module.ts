import { Module } from '@nestjs/common';
import { WorkerPoolsController } from './worker-pools.controller';
import { WorkerPoolsRepository } from './worker-pools.repository';
import { WorkerPoolsService } from './worker-pools.service';

/** Worker pools and enrollment tokens: part of Computers, a module of its own so the operator's CLI has it without the rest. */
@Module({
  controllers: [WorkerPoolsController],
  providers: [WorkerPoolsRepository, WorkerPoolsService],
  exports: [WorkerPoolsService],
})
export class WorkerPoolsModule {}

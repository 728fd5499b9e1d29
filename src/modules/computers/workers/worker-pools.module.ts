import { Module } from '@nestjs/common';
import { WorkerPoolsController } from './worker-pools.controller';
import { WorkerPoolsRepository } from './worker-pools.repository';
import { WorkerPoolsService } from './worker-pools.service';
import { WorkersRepository } from './workers.repository';

/**
 * Worker pools, their enrollment tokens and the workers registered into them, as people and the operator manage them:
 * part of Computers, a module of its own so the operator's CLI has it without the rest (the worker channel and its
 * sweep are in ComputersModule).
 */
@Module({
  controllers: [WorkerPoolsController],
  providers: [WorkerPoolsRepository, WorkersRepository, WorkerPoolsService],
  exports: [WorkerPoolsService, WorkersRepository],
})
export class WorkerPoolsModule {}

import { Module } from '@nestjs/common';
import { SecretBox } from '../../../platform/secrets/secret-box';
import { AuthModule } from '../../auth';
import { AgentTokens } from '../agent-tokens.service';
import { WorkerRecovery } from './worker-recovery';
import { WorkerPoolsController } from './worker-pools.controller';
import { WorkerPoolsRepository } from './worker-pools.repository';
import { WorkerPoolsService } from './worker-pools.service';
import { WorkersRepository } from './workers.repository';

/**
 * Worker pools, their enrollment tokens and the workers registered into them, as people and the operator manage them
 * (with the recovery of an ended worker's computers, which revoking and evicting need, and the agent tokens it issues):
 * part of Computers, a module of its own so the operator's CLI has it without the rest (the worker channel and its
 * sweep are in ComputersModule).
 */
@Module({
  imports: [AuthModule],
  controllers: [WorkerPoolsController],
  providers: [WorkerPoolsRepository, WorkersRepository, WorkerPoolsService, WorkerRecovery, AgentTokens, SecretBox],
  exports: [WorkerPoolsService, WorkersRepository, WorkerRecovery, AgentTokens],
})
export class WorkerPoolsModule {}

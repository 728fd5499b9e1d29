import { Injectable, Logger } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EventLog } from '../../../platform/events';
import { Authenticator } from '../../auth';
import { AgentTokens } from '../agent-tokens.service';
import { ComputerStatus, ComputerTrigger, nextStatus } from '../domain/computer-status';
import { WorkerEntity } from '../entities';
import { WorkersRepository } from './workers.repository';

/** What a recovery changed, and what to do once its transaction committed. */
export interface Recovery {
  computers: number;
  /** After the commit: this instance forgets the old agent tokens at once (other instances within AUTH_CACHE_MS). */
  committed(): void;
}

/**
 * A worker's session ended (it left, was lost, evicted, or its token revoked): inside the transaction that ended it, its
 * computers are taken off it to be placed again. Each gets a new agent token, so the copies the ended worker holds open
 * nothing; its steps run again from the first, since its workspace was on that worker (work not pushed is lost); an
 * active or provisioning computer is provisioning again, one in error stays in error until retried.
 */
@Injectable()
export class WorkerRecovery {
  private readonly logger = new Logger(WorkerRecovery.name);

  constructor(
    private readonly workers: WorkersRepository,
    private readonly tokens: AgentTokens,
    private readonly events: EventLog,
    private readonly authenticator: Authenticator,
  ) {}

  async recover(manager: EntityManager, ended: readonly WorkerEntity[]): Promise<Recovery> {
    const oldTokens: string[] = [];
    for (const worker of ended) {
      for (const computer of await this.workers.computersOn(manager, worker)) {
        const to = nextStatus(ComputerTrigger.WorkerLost, computer.status as ComputerStatus)!;
        await this.workers.unplace(manager, computer, this.tokens.issue(computer.provider, computer.id), to);
        oldTokens.push(computer.agentTokenHash);
        const { organizationId } = computer;
        this.events.raise(manager, {
          type: 'computer.placement_changed',
          organizationId,
          actor: { kind: 'system' },
          data: { computerId: computer.id, workerId: null, poolId: null, reason: 'worker_left' },
        });
        if (to !== computer.status) {
          this.events.raise(manager, {
            type: 'computer.status_changed',
            organizationId,
            actor: { kind: 'system' },
            data: { computerId: computer.id, provider: computer.provider, from: computer.status as ComputerStatus, to, step: null },
          });
        }
        this.logger.warn(
          { organizationId, computerId: computer.id, workerId: worker.id },
          `Computer ${computer.id} taken off worker ${worker.name} (${worker.status}): it will be provisioned again on another`,
        );
      }
    }
    return {
      computers: oldTokens.length,
      committed: () => {
        for (const hash of oldTokens) this.authenticator.forgetComputerToken(hash);
      },
    };
  }
}

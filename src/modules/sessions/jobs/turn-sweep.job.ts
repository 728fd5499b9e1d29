import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { AppConfig } from '../../../config/app-config';
import { TurnControlService } from '../turn-control.service';

const JOB_NAME = 'sessions.turn-sweep';

/**
 * Every TURN_SWEEP_MS, each instance ends interrupted turns whose agent did not end them within
 * AGENT_INTERRUPT_GRACE_MS, and writes down tool approvals nobody answered in time as `expired`
 * (an agent waiting on one learns it at once anyway). Rows are claimed with SKIP LOCKED or under the
 * session's lock, so instances sweeping at once never do the same work twice.
 */
@Injectable()
export class TurnSweepJob implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(TurnSweepJob.name);
  private sweeping: Promise<void> | null = null;

  constructor(
    private readonly turns: TurnControlService,
    private readonly scheduler: SchedulerRegistry,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.scheduler.addInterval(JOB_NAME, setInterval(() => void this.sweep(), this.config.TURN_SWEEP_MS));
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.scheduler.doesExist('interval', JOB_NAME)) this.scheduler.deleteInterval(JOB_NAME);
    await this.sweeping;
  }

  sweep(): Promise<void> {
    this.sweeping ??= this.turns
      .sweep()
      .then(({ turnsEnded, approvalsExpired }) => {
        if (turnsEnded + approvalsExpired > 0) this.logger.log({ turnsEnded, approvalsExpired }, 'Turn sweep');
      })
      .catch((error: Error) => this.logger.error(`Turn sweep failed: ${error.message}`, error.stack))
      .finally(() => (this.sweeping = null));
    return this.sweeping;
  }
}

import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { OnDomainEvent, StoredEvent } from '../../../platform/events';
import { JobHandle, JobRunner } from '../../../platform/jobs';
import { TurnControlService } from '../turn-control.service';

const JOB_NAME = 'sessions.turn-sweep';
/** After the moment something falls due, so that the database's clock has passed it too. */
const MARGIN_MS = 50;
/** How soon a sweep is tried again when a lapsed turn's row was held by another transaction (SKIP LOCKED). */
const SKIPPED_RETRY_MS = 250;

/**
 * Ends interrupted turns whose agent did not end them within AGENT_INTERRUPT_GRACE_MS, and writes
 * down tool approvals nobody answered in time as `expired` (an agent waiting on one learns it at
 * once anyway). Each instance sweeps when something falls due, as it learns from the events of every
 * instance (`turn.interrupted`, `tool_approval.requested`), so an idle server asks its database
 * nothing; and every TURN_SWEEP_MS in case it missed some (a restart), as the `sessions.turn-sweep`
 * job. Rows are claimed with SKIP LOCKED or under the session's lock, so instances sweeping at once
 * never do the same work twice.
 */
@Injectable()
export class TurnSweepJob implements BeforeApplicationShutdown {
  private readonly logger = new Logger(TurnSweepJob.name);
  private readonly job: JobHandle<void>;
  /** When known work falls due (Unix ms), soonest first. */
  private due: number[] = [];
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private stopping = false;

  constructor(
    private readonly turns: TurnControlService,
    private readonly config: AppConfig,
    jobs: JobRunner,
  ) {
    // At start too: what fell due while no instance ran (or before this one knew of it).
    this.job = jobs.register({ name: JOB_NAME, everyMs: config.TURN_SWEEP_MS, runAtStart: true, run: () => this.run() });
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    await this.job.stop();
  }

  @OnDomainEvent('turn.interrupted')
  onInterrupted(event: StoredEvent<'turn.interrupted'>): void {
    this.dueAt(event.occurredAt.getTime() + this.config.AGENT_INTERRUPT_GRACE_MS + MARGIN_MS);
  }

  @OnDomainEvent('tool_approval.requested')
  onRequested(event: StoredEvent<'tool_approval.requested'>): void {
    this.dueAt(event.data.expiresAt + MARGIN_MS);
  }

  /** A sweep now, or right after the one under way. */
  async sweep(): Promise<void> {
    await this.job.runNow();
  }

  private async run(): Promise<void> {
    const { turnsEnded, approvalsExpired, turnsSkipped } = await this.turns.sweep();
    if (turnsEnded + approvalsExpired > 0) this.logger.log({ turnsEnded, approvalsExpired }, 'Turn sweep');
    // Under load an agent's heartbeats can hold its session's row at every sweep: without this, its turn would wait for
    // the next TURN_SWEEP_MS (a minute) rather than end at its grace (seen in CI on PostgreSQL).
    if (turnsSkipped) this.dueAt(Date.now() + SKIPPED_RETRY_MS);
  }

  private dueAt(at: number): void {
    if (this.stopping) return;
    const i = this.due.findIndex((t) => t > at);
    this.due.splice(i === -1 ? this.due.length : i, 0, at);
    this.arm();
  }

  /** Sets the timer for the soonest due moment. */
  private arm(): void {
    const next = this.due[0];
    if (next === undefined || next >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = setTimeout(() => void this.fire(), Math.max(0, next - Date.now()));
  }

  private async fire(): Promise<void> {
    this.timer = null;
    this.timerAt = Infinity;
    // A sweep under way may have looked before these fell due: `sweep` runs after it.
    const now = Date.now();
    this.due = this.due.filter((t) => t > now);
    await this.sweep();
    if (!this.stopping) this.arm();
  }
}

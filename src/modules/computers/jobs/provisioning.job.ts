import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { hostname } from 'node:os';
import { AppConfig } from '../../../config/app-config';
import { newId } from '../../../platform/database/ids';
import { EventLog } from '../../../platform/events';
import { ServerDetails } from '../../../platform/http/server-details';
import { JobHandle, JobRunner } from '../../../platform/jobs';
import { ServerLogs } from '../../sessions';
import { ClaimedStep, ComputersRepository, StepMoved } from '../computers.repository';
import { StepStatus } from '../domain/provisioning-step';
import { stepMovedEvents } from './step-events';
import { ComputeProvider, StepFailure } from '../providers/compute-provider';

const JOB_NAME = 'computers.provisioning';

/** A step taken over this often without ever finishing fails (it keeps killing its instance). */
export const MAX_ATTEMPTS = 3;

class StepTimedOut extends Error {}
class ClaimLost extends Error {}
class InstanceStopping extends Error {}

interface RunningStep {
  claim: ClaimedStep;
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Advances managed computers' provisioning steps. Every instance ticks (the `computers.provisioning`
 * job, every PROVISIONING_POLL_MS); a tick only claims steps in PostgreSQL (`FOR UPDATE SKIP LOCKED`, leased), so no
 * step runs on two live instances. A running step renews its lease; an instance that dies lets
 * it lapse, and another instance takes the step over and runs it again from the start.
 */
@Injectable()
export class ProvisioningJob implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ProvisioningJob.name);
  private readonly running = new Map<string, RunningStep>();
  /**
   * Names this instance in provisioning logs, so an operator sees which instance ran a step; the server's log says
   * which host and process that is (users see the logs: never the host's name or a pid).
   */
  private readonly instance = `instance-${newId().slice(-6)}`;
  /** Step errors and install logs reach the computer's users: without the server's folders or host name. */
  private readonly details: ServerDetails;
  private job: JobHandle<void> | null = null;
  private readonly stepMoved: StepMoved;
  private stopping = false;

  constructor(
    private readonly repository: ComputersRepository,
    private readonly provider: ComputeProvider,
    private readonly logs: ServerLogs,
    events: EventLog,
    private readonly jobs: JobRunner,
    private readonly config: AppConfig,
  ) {
    this.details = new ServerDetails(config);
    this.stepMoved = stepMovedEvents(events);
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.PROVISIONING_CONCURRENCY === 0) return;
    this.logger.log(`Provisioning as ${this.instance} (host ${hostname()}, pid ${process.pid})`);
    if (this.config.engine === 'pglite') {
      // The data directory's lock makes this the only process: claims left running are from a previous run.
      const released = await this.repository.releaseAll();
      if (released > 0) this.logger.log(`Resuming ${released} provisioning step(s) left running by the previous run`);
    }
    this.job = this.jobs.register({ name: JOB_NAME, everyMs: this.config.PROVISIONING_POLL_MS, runAtStart: true, run: () => this.tick() });
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    // No tick claims a step after this: the steps below are all there are.
    await this.job?.stop();
    const steps = [...this.running.values()];
    for (const step of steps) step.controller.abort(new InstanceStopping());
    await Promise.all(steps.map((step) => step.done));
  }

  /** Looks for work now rather than at the next tick: a computer was just created or retried here. */
  wake(): void {
    if (this.config.PROVISIONING_CONCURRENCY > 0) setImmediate(() => void this.job?.runNow());
  }

  /** Claims steps while this instance has room; each runs in the background (a failed tick is logged by the runner). */
  private async tick(): Promise<void> {
    while (!this.stopping && this.running.size < this.config.PROVISIONING_CONCURRENCY) {
      const next = await this.repository.claimNext({ kind: 'server' }, newId(), this.config.PROVISIONING_LEASE_MS, MAX_ATTEMPTS, this.stepMoved);
      if (!next) break;
      if ('abandoned' in next) continue;
      this.start(next.claimed);
    }
  }

  private start(claim: ClaimedStep): void {
    const key = `${claim.step.computerId}:${claim.step.position}`;
    const controller = new AbortController();
    const running: RunningStep = { claim, controller, done: Promise.resolve() };
    this.running.set(key, running);
    running.done = this.run(claim, controller)
      // The database failed while finishing: the claim's lease runs out and another instance takes the step over.
      .catch((error: Error) => this.logger.error(`Step ${claim.step.stepId} of computer ${claim.step.computerId} could not be recorded: ${error.message}`))
      .finally(() => {
        this.running.delete(key);
        if (!this.stopping) setImmediate(() => void this.job?.runNow());
      });
  }

  private async run(claim: ClaimedStep, controller: AbortController): Promise<void> {
    const { step, computer } = claim;
    const fence = { organizationId: step.organizationId, computerId: step.computerId, position: step.position, claimId: step.claimId! };
    const timeoutMs = this.config.PROVISIONING_STEP_TIMEOUT_MS;
    const timer = setTimeout(() => controller.abort(new StepTimedOut()), timeoutMs);
    const renewal = setInterval(
      () => {
        this.repository.renewClaim(fence, this.config.PROVISIONING_LEASE_MS).then(
          (held) => held || controller.abort(new ClaimLost()),
          (error: Error) => this.logger.warn(`Could not renew the claim on ${step.stepId} of computer ${computer.id}: ${error.message}`),
        );
      },
      Math.max(100, Math.floor(this.config.PROVISIONING_LEASE_MS / 3)),
    );
    const log = async (text: string) => {
      if (step.installSessionId) await this.logs.append(computer.organizationId, step.installSessionId, this.details.redact(text));
    };
    try {
      await log(`Step ${step.stepId} started on ${this.instance} (attempt ${step.attempts}).`);
      const result = await this.provider.runStep(step.stepId, {
        computer: { id: computer.id, organizationId: computer.organizationId, repos: computer.repos, autoInstallDeps: computer.autoInstallDeps },
        signal: controller.signal,
        log,
      });
      controller.signal.throwIfAborted();
      const finished = await this.repository.finish(
        fence,
        { status: StepStatus.Completed, clonedRepoDirectories: result.clonedRepoDirectories },
        this.stepMoved,
      );
      this.afterFinish(claim, finished);
    } catch (caught) {
      const reason = controller.signal.aborted ? (controller.signal.reason as Error) : (caught as Error);
      if (reason instanceof InstanceStopping) {
        await this.repository.release(fence);
        return;
      }
      if (reason instanceof ClaimLost) {
        await this.tearDownIfDeleted(computer);
        return;
      }
      const error =
        reason instanceof StepTimedOut
          ? `Timed out: still running after ${Math.round(timeoutMs / 1000)} s (PROVISIONING_STEP_TIMEOUT_MS), so it was stopped.`
          : reason instanceof StepFailure
            ? this.details.redact(reason.message)
            : `Internal error: the step could not run; the server's log has the details (computer ${computer.id}, step ${step.stepId}).`;
      if (!(reason instanceof StepFailure) && !(reason instanceof StepTimedOut)) {
        this.logger.error(`Step ${step.stepId} of computer ${computer.id} failed unexpectedly: ${reason.stack ?? reason.message}`);
      }
      await log(`Step ${step.stepId} failed: ${error}`).catch(() => undefined);
      const finished = await this.repository.finish(fence, { status: StepStatus.Failed, error }, this.stepMoved);
      this.afterFinish(claim, finished);
    } finally {
      clearTimeout(timer);
      clearInterval(renewal);
    }
  }

  private afterFinish(claim: ClaimedStep, finished: Awaited<ReturnType<ComputersRepository['finish']>>): void {
    if (finished.lost) {
      this.tearDownIfDeleted(claim.computer).catch((error: Error) =>
        this.logger.error(`Could not remove the workspace of deleted computer ${claim.computer.id}: ${error.message}`),
      );
    }
  }

  /** A computer deleted while its step ran: the step may have written files after the delete removed them. */
  private async tearDownIfDeleted(computer: ClaimedStep['computer']): Promise<void> {
    if (!(await this.repository.exists(computer.id, computer.organizationId))) await this.provider.teardown(computer.id);
  }
}

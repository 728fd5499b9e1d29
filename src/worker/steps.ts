import { setTimeout as sleep } from 'node:timers/promises';
import { ChannelRefusal, describe } from '../contract/retrying-request';
import type { ClaimAnswer, HeldStep, StepFinishAnswer, StepFinishRequest, StepWork } from '../contract/worker-channel';
import { StepFailure, StepId } from '../host/step';
import type { WorkerComputers } from './computers';
import { StepLog } from './step-log';
import type { WorkerClient } from './worker-client';

/** A claim waits this long on the server for a step (its limit is 30 s). */
export const CLAIM_WAIT_MS = 25_000;
/** Claims waiting at once: the server refuses a third (429). */
const CLAIMS_AT_ONCE = 2;
/** A claim answered sooner than this without work is not asked again before it has passed (a server answering at once). */
const MIN_CLAIM_MS = 1_000;
const MAX_CLAIM_BACKOFF_MS = 10_000;
/** The server's limit on a step's `error`. */
const MAX_ERROR_CHARS = 2_000;

class StepTimedOut extends Error {}
/** The server took the step back (a heartbeat's `lostSteps`, a 409): its partial work is left for the reconcile to remove. */
class ClaimLost extends Error {}
/** The worker is stopping: the step is finished by no one here, and the server takes it back once its claim lapses. */
class WorkerStopping extends Error {}

interface RunningStep {
  work: StepWork;
  controller: AbortController;
}

/**
 * The worker's step runners: up to `count` steps at once, each runner claiming with a long poll (never more than two
 * waiting), running the claimed step with the host library, logging it in batches and finishing it, fenced by its claim.
 * The heartbeat names the running steps to keep their claims (`held`) and stops those the server took back (`lose`).
 */
export class StepRunners {
  private readonly running = new Map<string, RunningStep>();
  private readonly stopping = new AbortController();
  private freeSlots = CLAIMS_AT_ONCE;
  private readonly waitingForSlot: Array<() => void> = [];
  private loops: Promise<void>[] = [];

  constructor(
    private readonly count: number,
    private readonly client: WorkerClient,
    private readonly computers: WorkerComputers,
    private readonly session: () => string | null,
    /** The server says what the worker holds changed: heartbeat now. */
    private readonly onSync: () => void,
    private readonly redact: (text: string) => string,
    private readonly log: (line: string) => void,
  ) {}

  /** Starts the runners, once: they claim in whichever session the worker has at the time. */
  start(): void {
    if (this.loops.length > 0) return;
    this.loops = Array.from({ length: Math.max(1, this.count) }, () => this.claimLoop());
  }

  /** The steps running now, for the heartbeat that keeps their claims. */
  held(): HeldStep[] {
    return [...this.running.values()].map(({ work }) => ({ computerId: work.computerId, position: work.position, claimId: work.claimId }));
  }

  /** Stops the steps the server no longer holds this worker's. */
  lose(lost: ReadonlyArray<{ computerId: string; position: number }>): void {
    for (const step of lost) this.running.get(keyOf(step))?.controller.abort(new ClaimLost());
  }

  /** Stops claiming and aborts every running step, finishing none; resolves once all have ended. */
  async stop(): Promise<void> {
    this.stopping.abort();
    for (const step of this.running.values()) step.controller.abort(new WorkerStopping());
    for (const wake of this.waitingForSlot.splice(0)) wake();
    await Promise.all(this.loops);
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async claimLoop(): Promise<void> {
    // After a step that left its computer provisioning, its next step is pending now, and the server wakes no waiting
    // claim for it: a look without waiting (which takes no slot) gets it at once rather than a long poll later.
    let lookNow = false;
    for (let failures = 0; !this.stopped;) {
      const session = this.session();
      if (!session) {
        await this.pause(MIN_CLAIM_MS);
        continue;
      }
      const looking = lookNow;
      lookNow = false;
      const release = looking ? () => undefined : await this.slot();
      if (this.stopped) return release();
      const askedAt = Date.now();
      let answer: ClaimAnswer | null;
      try {
        answer = await this.client.claim(session, looking ? 0 : CLAIM_WAIT_MS, this.stopping.signal);
        failures = 0;
      } catch (error) {
        if (this.stopped) return release();
        failures++;
        const delay = Math.min(MAX_CLAIM_BACKOFF_MS, MIN_CLAIM_MS * 2 ** Math.min(failures - 1, 4));
        // A 401 is the heartbeat's to act on (the session ended); here it only slows the claims down.
        if (!(error instanceof ChannelRefusal && error.status === 401)) this.log(`claiming a step failed (${describe(error)}); trying again in ${delay} ms`);
        release();
        await this.pause(delay);
        continue;
      }
      release();
      if (answer?.sync) this.onSync();
      if (answer?.work) lookNow = (await this.run(answer.work, session)) === 'provisioning';
      else if (!looking && Date.now() - askedAt < MIN_CLAIM_MS) await this.pause(MIN_CLAIM_MS);
    }
  }

  /** Runs a claimed step; resolves to its computer's status once finished, null when the step ended unfinished. */
  private async run(work: StepWork, session: string): Promise<StepFinishAnswer['computerStatus'] | null> {
    const { computerId, position, claimId } = work;
    const fence = { computerId, position, claimId };
    const controller = new AbortController();
    this.running.set(keyOf(work), { work, controller });
    this.computers.stepStarted(computerId, work.organizationId);
    const timer = setTimeout(() => controller.abort(new StepTimedOut()), work.timeoutMs);
    const stepLog = new StepLog(
      (text) => this.client.logStep(session, { ...fence, text }),
      this.redact,
      (error) => {
        if (error instanceof ChannelRefusal && error.status === 409) controller.abort(new ClaimLost());
        else this.log(`output of step ${work.stepId} of computer ${computerId} could not be sent: ${describe(error)}`);
      },
    );
    let outcome: Pick<StepFinishRequest, 'status' | 'error'> = { status: 'completed' };
    try {
      this.log(`step ${work.stepId} of computer ${computerId} claimed (attempt ${work.attempt})`);
      stepLog.add(`Step ${work.stepId} started on a worker (attempt ${work.attempt}).`);
      await this.computers.provisioner.runStep(work.stepId as StepId, {
        computer: { id: computerId, organizationId: work.organizationId, repos: work.repos, autoInstallDeps: work.autoInstallDeps },
        signal: controller.signal,
        log: async (text) => stepLog.add(text),
      });
      controller.signal.throwIfAborted();
    } catch (caught) {
      const reason = controller.signal.aborted ? (controller.signal.reason as Error) : (caught as Error);
      if (reason instanceof ClaimLost || reason instanceof WorkerStopping) {
        this.log(
          `step ${work.stepId} of computer ${computerId} stopped: ${reason instanceof ClaimLost ? 'the server took it back' : 'the worker is stopping'}`,
        );
        return null;
      }
      const error =
        reason instanceof StepTimedOut
          ? `Timed out: still running after ${Math.round(work.timeoutMs / 1000)} s (PROVISIONING_STEP_TIMEOUT_MS), so it was stopped.`
          : reason instanceof StepFailure
            ? this.redact(reason.message)
            : `Internal error: the step could not run; the worker's log has the details (computer ${computerId}, step ${work.stepId}).`;
      if (!(reason instanceof StepFailure) && !(reason instanceof StepTimedOut)) {
        this.log(`step ${work.stepId} of computer ${computerId} failed unexpectedly: ${reason.stack ?? reason.message}`);
      }
      stepLog.add(`Step ${work.stepId} failed: ${error}`);
      outcome = { status: 'failed', error: error.slice(0, MAX_ERROR_CHARS) };
    } finally {
      clearTimeout(timer);
      await stepLog.flush();
      this.running.delete(keyOf(work));
      this.computers.stepEnded(computerId);
    }
    if (controller.signal.reason instanceof ClaimLost || controller.signal.reason instanceof WorkerStopping) return null;
    try {
      const finished = await this.client.finishStep(session, { ...fence, ...outcome });
      this.log(`step ${work.stepId} of computer ${computerId} ${outcome.status}: the computer is ${finished.computerStatus}`);
      // Its agent starts at the next heartbeat's answer: asked now, not a heartbeat later.
      if (finished.computerStatus === 'active') this.onSync();
      return finished.computerStatus;
    } catch (error) {
      this.log(`step ${work.stepId} of computer ${computerId} could not be finished (${describe(error)}): the server takes it back once its claim lapses`);
      return null;
    }
  }

  /** One of the claims that may wait at once; the function releases it. */
  private async slot(): Promise<() => void> {
    if (this.freeSlots > 0) this.freeSlots--;
    else await new Promise<void>((resolve) => this.waitingForSlot.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waitingForSlot.shift();
      if (next) next();
      else this.freeSlots++;
    };
  }

  private pause(ms: number): Promise<void> {
    return sleep(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }
}

function keyOf(step: { computerId: string; position: number }): string {
  return `${step.computerId}:${step.position}`;
}

import { randomUUID } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { freemem, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe } from '../contract/retrying-request';
import type { HeartbeatAnswer, Registration, WorkerUsage } from '../contract/worker-channel';
import type { HostLogger } from '../host/host-log';
import { packageRoot } from '../host/package-root';
import { WorkerComputers } from './computers';
import type { WorkerConfig } from './config';
import { DiskUse } from './disk-use';
import { workerRedactor } from './step-log';
import { StepRunners } from './steps';
import { ChannelRefusal, WorkerClient } from './worker-client';

/** What the worker keeps in `<dataDir>/worker.json` (mode 0600): enough to resume its session after a restart. */
export interface SavedSession {
  workerId: string;
  sessionToken: string;
  /** The server it belongs to: a session of another server is not tried. */
  url: string;
  poolName: string;
  heartbeatMs: number;
  leaseMs: number;
}

/** The worker cannot go on: its message says why; the program exits with `code`. */
export class WorkerStopped extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/** How long a registration refused for being one too many (409) or failing (server down) waits before the next, at most. */
const MAX_REGISTER_DELAY_MS = 30_000;
const MiB = 1024 * 1024;

/**
 * A worker of a pool: it registers with the enrollment token (or resumes the session it saved), keeps its lease with
 * heartbeats, runs the steps of the computers placed on it and their agents, and leaves when stopped. A session the
 * server ended (revoked, evicted, lost: 401) ends the worker (exit 1) and removes every computer it held; while the
 * server cannot be reached it keeps trying, and once its lease would have lapsed it registers anew.
 */
export class Worker {
  private readonly stopping = new AbortController();
  private readonly sessionFile: string;
  private readonly computers: WorkerComputers;
  private readonly steps: StepRunners;
  /** The session the steps and agents act in; null while there is none. */
  private session: SavedSession | null = null;
  /** Ends the current wait between heartbeats: the server said what the worker holds changed. */
  private heartbeatSoon: AbortController = new AbortController();
  private readonly diskUse: DiskUse;

  constructor(
    private readonly config: WorkerConfig,
    private readonly client: WorkerClient,
    private readonly log: (line: string) => void,
  ) {
    this.sessionFile = join(config.dataDir, 'worker.json');
    this.diskUse = new DiskUse(join(config.dataDir, 'computers'));
    const logger: HostLogger = { log, warn: log, error: log };
    const sessionToken = () => this.session?.sessionToken ?? null;
    this.computers = new WorkerComputers(config, client, sessionToken, logger);
    const redact = workerRedactor(
      [
        [join(config.dataDir, 'computers'), '$COMPUTERS_DIR'],
        [config.dataDir, '$WORKER_DATA_DIR'],
        [packageRoot(__dirname), '<worker>'],
      ],
      config.hostname,
    );
    this.steps = new StepRunners(config.capacity.computers, client, this.computers, sessionToken, () => this.heartbeatSoon.abort(), redact, log);
  }

  /** Ends the run: the pool is left, and `run` resolves to 0. */
  stop(): void {
    this.stopping.abort();
  }

  /** Runs until stopped (0) or until it cannot go on (WorkerStopped's code); resolves to the exit code. */
  async run(): Promise<number> {
    // A worker that cannot sandbox would take computers only to fail each one (and, least loaded, be chosen again).
    const unsandboxable = await this.computers.sandboxUnavailable();
    if (unsandboxable) {
      this.log(
        `this host cannot sandbox computers: ${unsandboxable}. Fix that, or run the worker with LOCAL_SANDBOX=off in a pool ` +
          'that allows unsandboxed workers (which trusts every member of the organization with this host).',
      );
      return 1;
    }
    try {
      let session = await this.resumed();
      for (;;) {
        if (!session) {
          session = await this.registered();
          // A new worker holds nothing yet: whatever an earlier session left on disk goes, before the first claim.
          if (session) await this.computers.reconcile([], Date.now());
        }
        if (!session || this.stopped) break;
        this.session = session;
        this.steps.start();
        if ((await this.keepLease(session)) === 'stopped') break;
        this.log(`the lease of ${session.workerId} has lapsed without a heartbeat reaching the server: registering anew`);
        this.session = null;
        session = null;
      }
      await this.steps.stop();
      await this.computers.stop();
      if (session) await this.leave(session);
      return 0;
    } catch (error) {
      if (!(error instanceof WorkerStopped)) throw error;
      this.log(error.message);
      await this.endEverything();
      return error.code;
    }
  }

  /** The session ended (or the worker cannot go on): no step, no agent, no computer's folder is left behind. */
  private async endEverything(): Promise<void> {
    this.session = null;
    await this.steps.stop();
    await this.computers.removeAll().catch((error: Error) => this.log(`removing the computers' folders failed: ${error.message}`));
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /** The saved session, when the server still has it online (a first heartbeat says); null otherwise (a 401 removes the file). */
  private async resumed(): Promise<SavedSession | null> {
    const saved = this.saved();
    if (!saved) return null;
    const renewed = await this.heartbeatUntilLapsed(saved, Date.now() + saved.leaseMs);
    if (renewed instanceof ChannelRefusal) {
      this.forget();
      this.log(`the saved session of ${saved.workerId} has ended (${endedStatusOf(renewed) ?? 'not valid'}): registering anew`);
      return null;
    }
    if (renewed === 'stopped' || renewed === 'lapsed') return null;
    this.log(`registered as ${saved.workerId} in pool ${saved.poolName} (the saved session, resumed)`);
    // What the server still places here is kept, the rest goes, before the first claim.
    await this.computers.reconcile(renewed.answer.computers, renewed.askedAt);
    return saved;
  }

  /** A new session from the enrollment token, saved; tried until it is had or the worker stops (null). */
  private async registered(): Promise<SavedSession | null> {
    const { config } = this;
    for (let attempt = 1; !this.stopped; attempt++) {
      let registration: Registration;
      try {
        registration = await this.client.register(
          config.enrollmentToken,
          {
            name: config.name,
            hostname: config.hostname,
            labels: config.labels,
            capacity: config.capacity,
            sandboxed: config.sandboxed,
            version: config.version,
          },
          this.stopping.signal,
        );
      } catch (error) {
        if (this.stopped) return null;
        if (error instanceof ChannelRefusal && error.status !== 409 && error.status < 500) {
          throw new WorkerStopped(`The server refused to register this worker: ${error.message}`, 1);
        }
        const delay = Math.min(MAX_REGISTER_DELAY_MS, 1_000 * 2 ** Math.min(attempt - 1, 5));
        this.log(`registering failed (${describe(error)}); trying again in ${delay} ms`);
        await this.pause(delay);
        continue;
      }
      const session: SavedSession = {
        workerId: registration.workerId,
        sessionToken: registration.sessionToken,
        url: config.url,
        poolName: registration.poolName,
        heartbeatMs: registration.heartbeatMs,
        leaseMs: registration.leaseMs,
      };
      this.save(session);
      this.log(
        `registered as ${session.workerId} in pool ${session.poolName}: ${registration.capacity.computers} computers, heartbeat every ${session.heartbeatMs} ms`,
      );
      return session;
    }
    return null;
  }

  /**
   * Heartbeats every `heartbeatMs` (at once when a claim says what the worker holds changed) until stopped or the lease
   * lapses; a session the server ended stops the worker (exit 1).
   */
  private async keepLease(session: SavedSession): Promise<'stopped' | 'lapsed'> {
    let leaseUntil = Date.now() + session.leaseMs;
    for (;;) {
      if (!this.heartbeatSoon.signal.aborted) {
        await sleep(session.heartbeatMs, undefined, { signal: AbortSignal.any([this.stopping.signal, this.heartbeatSoon.signal]) }).catch(() => undefined);
      }
      this.heartbeatSoon = new AbortController();
      if (this.stopped) return 'stopped';
      const startedAt = Date.now();
      const renewed = await this.heartbeatUntilLapsed(session, leaseUntil);
      if (renewed === 'stopped' || renewed === 'lapsed') return renewed;
      if (!(renewed instanceof ChannelRefusal)) {
        this.steps.lose(renewed.answer.lostSteps);
        void this.computers.reconcile(renewed.answer.computers, renewed.askedAt);
      }
      if (renewed instanceof ChannelRefusal) {
        this.forget();
        throw new WorkerStopped(
          `The server ended this worker's session (${endedStatusOf(renewed) ?? 'not valid'}): ${renewed.body.detail ?? renewed.message}`,
          1,
        );
      }
      leaseUntil = startedAt + session.leaseMs;
    }
  }

  /**
   * One heartbeat, tried again (the server down, a 5xx) until the lease would have lapsed: `renewed`, the server's 401
   * (the session ended), or why it stopped trying. Another refusal (a 4xx the worker did not expect) stops the worker.
   */
  private async heartbeatUntilLapsed(
    session: SavedSession,
    leaseUntil: number,
  ): Promise<{ answer: HeartbeatAnswer; askedAt: number } | 'stopped' | 'lapsed' | ChannelRefusal> {
    for (let attempt = 1; ; attempt++) {
      try {
        const askedAt = Date.now();
        const answer = await this.client.heartbeat(session.sessionToken, { usage: usage(this.diskUse.mb()), steps: this.steps.held() }, this.stopping.signal);
        return { answer, askedAt };
      } catch (error) {
        if (this.stopped) return 'stopped';
        if (error instanceof ChannelRefusal && error.status === 401) return error;
        if (error instanceof ChannelRefusal && error.status < 500) throw new WorkerStopped(`The server refused a heartbeat: ${error.message}`, 1);
        const delay = Math.min(session.heartbeatMs, 500 * 2 ** Math.min(attempt - 1, 6));
        if (Date.now() + delay >= leaseUntil) return 'lapsed';
        this.log(`heartbeat failed (${describe(error)}); trying again in ${delay} ms`);
        await this.pause(delay);
        if (this.stopped) return 'stopped';
      }
    }
  }

  /** Leaves the pool (its session ends now, not a lease later); the saved session goes with it. */
  private async leave(session: SavedSession): Promise<void> {
    try {
      await this.client.leave(session.sessionToken);
      this.log(`left pool ${session.poolName}`);
    } catch (error) {
      // Already ended: nothing to leave. Otherwise the server is away: the lease lapses by itself (lost).
      if (!(error instanceof ChannelRefusal && error.status === 401)) {
        this.log(`leaving failed (${describe(error)}): the server will find this worker lost once its lease lapses`);
        return;
      }
    }
    this.forget();
  }

  private saved(): SavedSession | null {
    let saved: Partial<SavedSession>;
    try {
      saved = JSON.parse(readFileSync(this.sessionFile, 'utf8')) as Partial<SavedSession>;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.log(`${this.sessionFile} cannot be read (${describe(error)}): registering anew`);
      return null;
    }
    const whole =
      typeof saved.workerId === 'string' &&
      typeof saved.sessionToken === 'string' &&
      typeof saved.poolName === 'string' &&
      Number.isInteger(saved.heartbeatMs) &&
      Number.isInteger(saved.leaseMs);
    if (!whole || saved.url !== this.config.url) {
      this.log(`${this.sessionFile} is not a session of ${this.config.url}: registering anew`);
      return null;
    }
    return saved as SavedSession;
  }

  /** Written whole or not at all (a crash mid-write leaves the old file), readable by this user only. */
  private save(session: SavedSession): void {
    const partial = `${this.sessionFile}.${randomUUID()}.tmp`;
    writeFileSync(partial, `${JSON.stringify(session, null, 2)}\n`, { mode: 0o600 });
    renameSync(partial, this.sessionFile);
  }

  private forget(): void {
    rmSync(this.sessionFile, { force: true });
  }

  /** Waits `ms`, or less when the worker is stopped meanwhile. */
  private pause(ms: number): Promise<void> {
    return sleep(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }
}

/** Why the server ended a session (`metadata.workerStatus` of its 401), when it said. */
function endedStatusOf(refusal: ChannelRefusal): string | undefined {
  const status = refusal.body.metadata?.workerStatus;
  return typeof status === 'string' ? status : undefined;
}

/** What the machine uses now (its load and memory), and the disk its computers take, for the pool's view. */
function usage(diskMb: number): WorkerUsage {
  return {
    cpuPercent: Math.min(102_400, Math.round(loadavg()[0] * 1000) / 10),
    memoryMb: Math.max(0, Math.floor((totalmem() - freemem()) / MiB)),
    diskMb,
  };
}

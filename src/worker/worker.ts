import { randomUUID } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { freemem, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe } from '../contract/retrying-request';
import type { Registration, WorkerUsage } from '../contract/worker-channel';
import type { WorkerConfig } from './config';
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
 * heartbeats, and leaves when stopped. A session the server ended (revoked, evicted, lost: 401) ends the worker (exit 1);
 * while the server cannot be reached it keeps trying, and once its lease would have lapsed it registers anew.
 */
export class Worker {
  private readonly stopping = new AbortController();
  private readonly sessionFile: string;

  constructor(
    private readonly config: WorkerConfig,
    private readonly client: WorkerClient,
    private readonly log: (line: string) => void,
  ) {
    this.sessionFile = join(config.dataDir, 'worker.json');
  }

  /** Ends the run: the pool is left, and `run` resolves to 0. */
  stop(): void {
    this.stopping.abort();
  }

  /** Runs until stopped (0) or until it cannot go on (WorkerStopped's code); resolves to the exit code. */
  async run(): Promise<number> {
    try {
      let session = await this.resumed();
      for (;;) {
        session ??= await this.registered();
        if (!session || this.stopped) break;
        if ((await this.keepLease(session)) === 'stopped') break;
        this.log(`the lease of ${session.workerId} has lapsed without a heartbeat reaching the server: registering anew`);
        session = null;
      }
      if (session) await this.leave(session);
      return 0;
    } catch (error) {
      if (!(error instanceof WorkerStopped)) throw error;
      this.log(error.message);
      return error.code;
    }
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
    if (renewed !== 'renewed') return null;
    this.log(`registered as ${saved.workerId} in pool ${saved.poolName} (the saved session, resumed)`);
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

  /** Heartbeats every `heartbeatMs` until stopped or the lease lapses; a session the server ended stops the worker (exit 1). */
  private async keepLease(session: SavedSession): Promise<'stopped' | 'lapsed'> {
    let leaseUntil = Date.now() + session.leaseMs;
    for (;;) {
      await this.pause(session.heartbeatMs);
      if (this.stopped) return 'stopped';
      const startedAt = Date.now();
      const renewed = await this.heartbeatUntilLapsed(session, leaseUntil);
      if (renewed === 'stopped' || renewed === 'lapsed') return renewed;
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
  private async heartbeatUntilLapsed(session: SavedSession, leaseUntil: number): Promise<'renewed' | 'stopped' | 'lapsed' | ChannelRefusal> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.heartbeat(session.sessionToken, usage(), this.stopping.signal);
        return 'renewed';
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

/** What the machine uses now, for the pool's view. No computers run here yet, so their disk is 0. */
function usage(): WorkerUsage {
  return {
    cpuPercent: Math.min(102_400, Math.round(loadavg()[0] * 1000) / 10),
    memoryMb: Math.max(0, Math.floor((totalmem() - freemem()) / MiB)),
    diskMb: 0,
  };
}

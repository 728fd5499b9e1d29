import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { isDatabaseUnavailable } from '../database/database-unavailable';
import { SchedulerRegistry } from '@nestjs/schedule';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { Metrics } from '../metrics';

/** A piece of background work that runs every so often on every instance. */
export interface JobDefinition<T = unknown> {
  /** Unique (`<module>.<what>`): logs and `jobStats()` use it; a second job with the same name is refused. */
  name: string;
  /** About how often it runs (a setting, or a constant for housekeeping); 0 or less: only when asked (`runNow`). */
  everyMs: number;
  /**
   * The work. Runs never overlap on one instance; with several instances it claims its work in the database
   * (lease, `FOR UPDATE SKIP LOCKED`, advisory lock) or is idempotent. `signal` aborts when the instance stops:
   * stop early, the rest is done by the next run (here or on another instance).
   */
  run(signal: AbortSignal): Promise<T>;
  /** Each wait is `everyMs` ± this fraction of it, drawn at random, so instances started together do not tick together. Default 0.1. */
  jitter?: number;
  /** Also runs as soon as it is started (work left by a previous process, or due while none ran). Default false. */
  runAtStart?: boolean;
  /** How long shutdown waits for a run in flight before it gives up on it. Default 10 s. */
  shutdownMs?: number;
}

/** What `jobStats()` tells of a job (kept in memory, for /metrics). */
export interface JobStats {
  /** Runs ended since start, failed ones included. */
  runs: number;
  failures: number;
  lastDurationMs: number | null;
  /** When the last ended run started. */
  lastRunAt: Date | null;
  running: boolean;
}

/** A registered job: ask for a run, or stop it before the instance does (to stop what its runs started after them). */
export interface JobHandle<T = unknown> {
  readonly name: string;
  /** Aborted once the job is stopped. */
  readonly signal: AbortSignal;
  /**
   * A run now, or right after the one in flight (which may have looked before the caller's change); callers meanwhile
   * share that next run. Resolves with its result, or undefined when it failed (logged) or the job is stopped; never rejects.
   */
  runNow(): Promise<T | undefined>;
  /** Resolves once no run is in flight (never starts one). */
  idle(): Promise<void>;
  /** Stops ticking, aborts the signal and waits (at most `shutdownMs`) for the run in flight. Idempotent. */
  stop(): Promise<void>;
}

export const DEFAULT_JITTER = 0.1;
export const DEFAULT_SHUTDOWN_MS = 10_000;

/** Each run is a trace of its own (`job <name>`), its queries under it; without a tracing SDK this does nothing. */
const tracer = trace.getTracer('agent-platform.jobs');

/** The wait before a tick: `everyMs` ± `jitter` of it, `random` being uniform in [0, 1). */
export function jitteredDelay(everyMs: number, jitter = DEFAULT_JITTER, random: () => number = Math.random): number {
  const spread = Math.min(Math.max(jitter, 0), 1) * everyMs;
  return Math.max(1, Math.round(everyMs - spread + 2 * spread * random()));
}

/** The name of a job's next tick in `@nestjs/schedule`'s registry (a timeout: each wait is drawn again). */
export function jobTimeoutName(job: string): string {
  return `job:${job}`;
}

class StoppingJob extends Error {
  constructor(name: string) {
    super(`${name}: the instance is stopping`);
  }
}

class ScheduledJob<T> implements JobHandle<T> {
  private readonly controller = new AbortController();
  private readonly stats: JobStats = { runs: 0, failures: 0, lastDurationMs: null, lastRunAt: null, running: false };
  private inFlight: Promise<T | undefined> | null = null;
  private next: Promise<T | undefined> | null = null;
  private readonly timeoutName: string;
  private started = false;
  private stopping: Promise<void> | null = null;
  private lastStartedAt: number | null = null;

  constructor(
    private readonly definition: JobDefinition<T>,
    private readonly logger: Logger,
    private readonly scheduler: SchedulerRegistry,
    private readonly ended: (name: string, seconds: number, failed: boolean) => void,
  ) {
    this.timeoutName = jobTimeoutName(definition.name);
  }

  /** Seconds since the latest run began (in flight or ended) beyond the longest wait between ticks: 0 on time, null before a first run. */
  lagSeconds(now: number): number | null {
    const { everyMs, jitter = DEFAULT_JITTER } = this.definition;
    if (everyMs <= 0 || this.lastStartedAt === null) return null;
    return Math.max(0, now - this.lastStartedAt - everyMs * (1 + jitter)) / 1000;
  }

  get name(): string {
    return this.definition.name;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  snapshot(): JobStats {
    return { ...this.stats, running: this.inFlight !== null };
  }

  start(): void {
    if (this.started || this.controller.signal.aborted) return;
    this.started = true;
    if (this.definition.runAtStart) void this.runNow();
    this.arm();
  }

  runNow(): Promise<T | undefined> {
    if (this.controller.signal.aborted) return Promise.resolve(undefined);
    if (!this.inFlight) return this.launch();
    this.next ??= this.inFlight.then(() => {
      this.next = null;
      return this.inFlight ?? this.launch();
    });
    return this.next;
  }

  async idle(): Promise<void> {
    while (this.inFlight) await this.inFlight;
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown(): Promise<void> {
    this.forgetTick();
    this.controller.abort(new StoppingJob(this.name));
    if (!this.inFlight) return;
    const limitMs = this.definition.shutdownMs ?? DEFAULT_SHUTDOWN_MS;
    let timeout: NodeJS.Timeout | undefined;
    const gaveUp = await Promise.race([
      this.inFlight.then(() => false),
      new Promise<boolean>((resolve) => (timeout = setTimeout(() => resolve(true), limitMs))),
    ]);
    clearTimeout(timeout);
    if (gaveUp) this.logger.warn({ job: this.name }, `Job ${this.name} was still running ${limitMs} ms into shutdown; not waiting for it`);
  }

  /**
   * The next tick, a jittered interval from now, as a timeout in the scheduler's registry under the job's name: a tick
   * is skipped when a run is still in flight (overlap guard).
   */
  private arm(): void {
    const { everyMs, jitter } = this.definition;
    if (everyMs <= 0 || this.controller.signal.aborted) return;
    const tick = setTimeout(
      () => {
        this.forgetTick();
        if (!this.inFlight) void this.launch();
        this.arm();
      },
      jitteredDelay(everyMs, jitter),
    );
    tick.unref();
    this.scheduler.addTimeout(this.timeoutName, tick);
  }

  /** Clears and unregisters the pending tick, if any (ScheduleModule may have cleared its registry at shutdown first). */
  private forgetTick(): void {
    if (this.scheduler.doesExist('timeout', this.timeoutName)) this.scheduler.deleteTimeout(this.timeoutName);
  }

  private launch(): Promise<T | undefined> {
    if (this.controller.signal.aborted) return Promise.resolve(undefined);
    const startedAt = new Date();
    this.lastStartedAt = startedAt.getTime();
    let failed = false;
    const run = tracer.startActiveSpan(`job ${this.name}`, { root: true, attributes: { 'job.name': this.name } }, async (span) => {
      try {
        return await this.definition.run(this.controller.signal);
      } catch (error) {
        failed = true;
        this.stats.failures += 1;
        const message = error instanceof Error ? error.message : String(error);
        span.setStatus({ code: SpanStatusCode.ERROR, message });
        // Failing while the instance stops (its database closing) is expected: not an error.
        if (this.controller.signal.aborted) this.logger.warn({ err: error, job: this.name }, `Job ${this.name} failed while stopping: ${message}`);
        // The database away (restarting, a lost connection): the next run tries again; /healthz says so meanwhile.
        else if (isDatabaseUnavailable(error)) this.logger.warn({ job: this.name }, `Job ${this.name} could not reach the database: ${message}`);
        else this.logger.error({ err: error, job: this.name }, `Job ${this.name} failed: ${message}`);
        return undefined;
      } finally {
        this.stats.runs += 1;
        this.stats.lastRunAt = startedAt;
        this.stats.lastDurationMs = Date.now() - startedAt.getTime();
        this.inFlight = null;
        this.ended(this.name, this.stats.lastDurationMs / 1000, failed);
        span.end();
      }
    });
    this.inFlight = run;
    return run;
  }
}

/**
 * Runs the background jobs: each on its interval (from config, with jitter; the pending tick is a timeout in
 * `@nestjs/schedule`'s SchedulerRegistry, named `job:<name>`), never two runs of a job at once on an instance, one
 * error line per failed run, stopped gracefully at shutdown (no new run, the signal aborted, the run in flight awaited
 * for a bounded time), with in-memory stats per job. Several instances stay safe because each job
 * claims its work in the database; the runner only paces it.
 *
 * Register from `onModuleInit` or `onApplicationBootstrap` (after what must happen before the first run): a job starts
 * ticking when registered and the application has bootstrapped, whichever comes last.
 */
@Injectable()
export class JobRunner implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(JobRunner.name);
  private readonly jobs = new Map<string, ScheduledJob<unknown>>();
  private readonly ended: (name: string, seconds: number, failed: boolean) => void;
  private readonly registeredJob: (name: string) => void;
  private bootstrapped = false;
  private stopped = false;

  constructor(
    metrics: Metrics,
    private readonly scheduler: SchedulerRegistry,
  ) {
    const runs = metrics.counter({
      name: 'job_runs_total',
      help: 'Ended runs of each background job, by outcome (ok, failed).',
      labelNames: ['job_name', 'outcome'] as const,
    });
    const duration = metrics.histogram({
      name: 'job_run_duration_seconds',
      help: 'How long each run of a background job took.',
      labelNames: ['job_name'] as const,
    });
    // Each job's series from 0, so that a rate over its first run (or first failure) sees it.
    this.registeredJob = (job) => {
      for (const outcome of ['ok', 'failed']) runs.inc({ job_name: job, outcome }, 0);
    };
    this.ended = (job, seconds, failed) => {
      runs.inc({ job_name: job, outcome: failed ? 'failed' : 'ok' });
      duration.observe({ job_name: job }, seconds);
    };
    metrics.gauge({
      name: 'job_running',
      help: 'Whether a run of the background job is in progress on this instance (1) or not (0).',
      labelNames: ['job_name'] as const,
      read: () => [...this.jobs].map(([name, job]) => ({ labels: { job_name: name }, value: job.snapshot().running ? 1 : 0 })),
    });
    metrics.gauge({
      name: 'job_lag_seconds',
      help: 'How late a periodic job is: seconds since its latest run began, beyond its longest wait between runs (0: on time).',
      labelNames: ['job_name'] as const,
      read: () =>
        [...this.jobs].flatMap(([name, job]) => {
          const lag = job.lagSeconds(Date.now());
          return lag === null ? [] : [{ labels: { job_name: name }, value: lag }];
        }),
    });
  }

  register<T>(definition: JobDefinition<T>): JobHandle<T> {
    if (this.jobs.has(definition.name)) throw new Error(`Two jobs are named ${definition.name}`);
    const job = new ScheduledJob(definition, this.logger, this.scheduler, this.ended);
    this.registeredJob(definition.name);
    this.jobs.set(definition.name, job as ScheduledJob<unknown>);
    if (this.stopped) void job.stop();
    else if (this.bootstrapped) job.start();
    return job;
  }

  onApplicationBootstrap(): void {
    this.bootstrapped = true;
    for (const job of this.jobs.values()) job.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.jobs.values()].map((job) => job.stop()));
  }

  /** A run of the named job now, or right after the one in flight (see `JobHandle.runNow`). */
  runNow(name: string): Promise<unknown> {
    const job = this.jobs.get(name);
    if (!job) throw new Error(`No job is named ${name}`);
    return job.runNow();
  }

  /** Per job: runs, failures, last duration and when the last run started. */
  jobStats(): Record<string, JobStats> {
    return Object.fromEntries([...this.jobs].map(([name, job]) => [name, job.snapshot()]));
  }

  /** The registered jobs' names (the architecture guide lists them). */
  registered(): string[] {
    return [...this.jobs.keys()];
  }
}

import { Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { jitteredDelay, JobRunner, jobTimeoutName } from './job-runner';
import { JobsModule } from './jobs.module';
import { Metrics, MetricsModule } from '../metrics';

/** A run the test ends when it wants: `release()` resolves it, `fail()` rejects it. */
function gate() {
  let release!: () => void;
  let fail!: (error: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    release = resolve;
    fail = reject;
  });
  return { promise, release, fail };
}

const until = async (condition: () => boolean, timeoutMs = 2_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
};

describe('JobRunner', () => {
  let runner: JobRunner;
  let errors: jest.SpyInstance;

  let metrics: Metrics;
  let scheduler: SchedulerRegistry;

  beforeEach(() => {
    metrics = new Metrics();
    scheduler = new SchedulerRegistry();
    runner = new JobRunner(metrics, scheduler);
    errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    await runner.beforeApplicationShutdown();
    jest.restoreAllMocks();
  });

  it('counts runs by outcome and shows a run stuck past its interval as lag', async () => {
    const value = async (name: string, labels: Record<string, string>) =>
      (await metrics.registry.getSingleMetric(name)!.get()).values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
    const stuck = gate();
    let calls = 0;
    runner.register({
      name: 'test.lag',
      everyMs: 20,
      jitter: 0,
      run: async () => {
        calls += 1;
        if (calls === 1) throw new Error('first run fails');
        await stuck.promise;
      },
    });
    expect(await value('agent_platform_job_runs_total', { job_name: 'test.lag', outcome: 'failed' })).toBe(0);
    runner.onApplicationBootstrap();
    await until(() => calls === 2);
    expect(await value('agent_platform_job_runs_total', { job_name: 'test.lag', outcome: 'failed' })).toBe(1);
    expect(await value('agent_platform_job_running', { job_name: 'test.lag' })).toBe(1);
    // The second run hangs: no run starts, and the lag grows past 0 once the interval has gone by.
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(await value('agent_platform_job_lag_seconds', { job_name: 'test.lag' })).toBeGreaterThan(0.02);
    stuck.release();
    await until(() => runner.jobStats()['test.lag'].runs >= 2);
    expect(await value('agent_platform_job_runs_total', { job_name: 'test.lag', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(await value('agent_platform_job_runs_total', { job_name: 'test.lag', outcome: 'failed' })).toBe(1);
  });

  it('draws every wait within ±10% of the interval by default, and spreads them', () => {
    expect(jitteredDelay(1_000, undefined, () => 0)).toBe(900);
    expect(jitteredDelay(1_000, undefined, () => 0.999999)).toBe(1_100);
    expect(jitteredDelay(1_000, 0, () => 0)).toBe(1_000);
    expect(jitteredDelay(1_000, 0.5, () => 0)).toBe(500);
    const drawn = Array.from({ length: 500 }, () => jitteredDelay(1_000));
    expect(Math.min(...drawn)).toBeGreaterThanOrEqual(900);
    expect(Math.max(...drawn)).toBeLessThanOrEqual(1_100);
    expect(new Set(drawn).size).toBeGreaterThan(20);
  });

  it('ticks on its interval, only once bootstrapped, and never starts a run while the previous one is in flight', async () => {
    let started = 0;
    let concurrent = 0;
    let most = 0;
    const runs: Array<ReturnType<typeof gate>> = [];
    runner.register({
      name: 'test.overlap',
      everyMs: 5,
      run: async () => {
        started += 1;
        concurrent += 1;
        most = Math.max(most, concurrent);
        const run = gate();
        runs.push(run);
        await run.promise;
        concurrent -= 1;
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(started).toBe(0);
    runner.onApplicationBootstrap();
    await until(() => started === 1);
    // Many intervals pass while the run is in flight: no second run.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(started).toBe(1);
    expect(runner.jobStats()['test.overlap']).toMatchObject({ running: true, runs: 0 });
    runs[0].release();
    await until(() => started === 2);
    runs[1].release();
    await until(() => runner.jobStats()['test.overlap'].runs >= 2);
    expect(most).toBe(1);
    const stats = runner.jobStats()['test.overlap'];
    expect(stats.failures).toBe(0);
    expect(stats.lastRunAt).toBeInstanceOf(Date);
    expect(stats.lastDurationMs).toBeGreaterThanOrEqual(0);
  });

  it('runNow runs at once, or once right after the run in flight, shared by every caller meanwhile', async () => {
    let started = 0;
    const runs: Array<ReturnType<typeof gate>> = [];
    const job = runner.register({
      name: 'test.now',
      everyMs: 0,
      run: async () => {
        started += 1;
        const run = gate();
        runs.push(run);
        await run.promise;
        return started;
      },
    });
    runner.onApplicationBootstrap();
    const first = job.runNow();
    expect(started).toBe(1);
    const second = job.runNow();
    const third = runner.runNow('test.now');
    expect(started).toBe(1);
    runs[0].release();
    expect(await first).toBe(1);
    await until(() => started === 2);
    runs[1].release();
    expect(await second).toBe(2);
    expect(await third).toBe(2);
    expect(started).toBe(2);
    expect(() => runner.runNow('test.unknown')).toThrow(/No job is named test.unknown/);
  });

  it('logs one error line with the job name per failed run, and the next run still happens', async () => {
    let calls = 0;
    const job = runner.register({
      name: 'test.failing',
      everyMs: 5,
      run: async () => {
        calls += 1;
        if (calls === 1) throw new Error('database unavailable');
        return 'ok';
      },
    });
    runner.onApplicationBootstrap();
    expect(await job.runNow()).toBeUndefined();
    expect(errors).toHaveBeenCalledTimes(1);
    expect(errors.mock.calls[0]).toEqual([expect.objectContaining({ job: 'test.failing' }), 'Job test.failing failed: database unavailable']);
    await until(() => calls >= 2);
    await until(() => runner.jobStats()['test.failing'].runs >= 2);
    expect(runner.jobStats()['test.failing']).toMatchObject({ failures: 1 });
    expect(errors).toHaveBeenCalledTimes(1);
  });

  it('runs at start when asked, and refuses a second job with the same name', async () => {
    let ran = false;
    runner.register({ name: 'test.start', everyMs: 60_000, runAtStart: true, run: async () => void (ran = true) });
    expect(() => runner.register({ name: 'test.start', everyMs: 1, run: async () => undefined })).toThrow(/Two jobs are named test.start/);
    runner.onApplicationBootstrap();
    await until(() => ran);
  });

  it('at shutdown stops ticking, aborts the run in flight and waits for it to end', async () => {
    let started = 0;
    let ended = false;
    let aborted = false;
    runner.register({
      name: 'test.shutdown',
      everyMs: 5,
      run: async (signal) => {
        started += 1;
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        aborted = signal.aborted;
        // Cleaning up after the abort takes a while: shutdown must wait for it.
        await new Promise((resolve) => setTimeout(resolve, 30));
        ended = true;
      },
    });
    runner.onApplicationBootstrap();
    await until(() => started === 1);
    await runner.beforeApplicationShutdown();
    expect(aborted).toBe(true);
    expect(ended).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(started).toBe(1);
    expect(await runner.runNow('test.shutdown')).toBeUndefined();
    expect(started).toBe(1);
  });

  it('a run failing because the instance stops is a warning, not an error', async () => {
    const job = runner.register({
      name: 'test.closing',
      everyMs: 0,
      run: (signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('connection closed')), { once: true })),
    });
    runner.onApplicationBootstrap();
    const run = job.runNow();
    await runner.beforeApplicationShutdown();
    expect(await run).toBeUndefined();
    expect(errors).not.toHaveBeenCalled();
    expect(Logger.prototype.warn).toHaveBeenCalledWith(
      expect.objectContaining({ job: 'test.closing' }),
      'Job test.closing failed while stopping: connection closed',
    );
    expect(runner.jobStats()['test.closing']).toMatchObject({ runs: 1, failures: 1, running: false });
  });

  it('gives up waiting for a run that ignores the abort after shutdownMs', async () => {
    const stuck = gate();
    const job = runner.register({ name: 'test.stuck', everyMs: 0, shutdownMs: 30, run: () => stuck.promise });
    runner.onApplicationBootstrap();
    void job.runNow();
    const began = Date.now();
    await job.stop();
    expect(Date.now() - began).toBeGreaterThanOrEqual(25);
    expect(Date.now() - began).toBeLessThan(1_000);
    expect(Logger.prototype.warn).toHaveBeenCalledWith({ job: 'test.stuck' }, expect.stringMatching(/still running 30 ms into shutdown/));
    stuck.release();
  });

  it("keeps each job's next tick in the SchedulerRegistry, a new timeout at every tick, and removes it when the job stops", async () => {
    let calls = 0;
    const job = runner.register({ name: 'test.registry', everyMs: 5, run: async () => void (calls += 1) });
    runner.register({ name: 'test.slow', everyMs: 60_000, run: async () => undefined });
    runner.register({ name: 'test.on-demand', everyMs: 0, run: async () => undefined });
    expect(scheduler.getTimeouts()).toEqual([]);
    runner.onApplicationBootstrap();
    // A job that runs only when asked has no tick.
    expect(scheduler.getTimeouts().sort()).toEqual([jobTimeoutName('test.registry'), jobTimeoutName('test.slow')]);
    const first = scheduler.getTimeout(jobTimeoutName('test.registry'));
    await until(() => calls >= 1);
    // Each wait is drawn again, so each tick arms a timeout of its own under the job's name.
    expect(scheduler.getTimeout(jobTimeoutName('test.registry'))).not.toBe(first);
    await job.stop();
    expect(scheduler.getTimeouts()).toEqual([jobTimeoutName('test.slow')]);
    const ran = calls;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(calls).toBe(ran);
    await runner.beforeApplicationShutdown();
    expect(scheduler.getTimeouts()).toEqual([]);
  });

  it('in the application, ticks in the ScheduleModule registry and leaves none behind at shutdown', async () => {
    const app = await Test.createTestingModule({ imports: [MetricsModule, JobsModule] }).compile();
    const jobs = app.get(JobRunner);
    const registry = app.get(SchedulerRegistry);
    let calls = 0;
    jobs.register({ name: 'test.app-a', everyMs: 60_000, run: async () => void (calls += 1) });
    await app.init();
    jobs.register({ name: 'test.app-b', everyMs: 60_000, run: async () => void (calls += 1) });
    expect(registry.getTimeouts().sort()).toEqual([jobTimeoutName('test.app-a'), jobTimeoutName('test.app-b')]);
    await app.close();
    expect(registry.getTimeouts()).toEqual([]);
    expect(await jobs.runNow('test.app-a')).toBeUndefined();
    expect(calls).toBe(0);
  });
});

'use strict';
/**
 * Jest's Node environment, except that a worker's end-to-end files share one V8 context: the first file makes it and
 * the next ones run in it. Together with worker-modules-runtime.js, which loads the app's modules once per worker
 * into that context, a file no longer pays to load and warm up the app again (Nest, TypeORM, Ajv, PGlite: about a
 * second of CPU a file, and the code V8 optimised in the files before stays optimised).
 *
 * What a file sets on the global object stays for the files after it in the worker; process.env is the worker's
 * own (Jest gives each context a copy), so a file that changes a variable puts it back, as every file here does.
 */
const { readFileSync, appendFileSync } = require('node:fs');
const { setFlagsFromString } = require('node:v8');
const { TestEnvironment } = require('jest-environment-node');
const { ModuleMocker } = require('jest-mock');
const { LegacyFakeTimers, ModernFakeTimers } = require('@jest/fake-timers');

// V8 compiles PGlite's WebAssembly once quickly and again, optimised, in the background. A test app lives a few
// seconds and does not earn the second compile back: skipping it, six ordinary files took about 12% less CPU.
setFlagsFromString('--liftoff-only');

/** The worker's one context, kept from its first end-to-end file on. */
let shared;

class WorkerContextEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.testPath = context.testPath;
    this.cpuAtStart = cpuMillis();
    if (!shared) {
      shared = { context: this.context, global: this.global };
      return;
    }
    // The context super() just made is dropped; mocks and fake timers are the file's own, on the shared global.
    const { projectConfig } = config;
    this.context = shared.context;
    this.global = shared.global;
    this.moduleMocker = new ModuleMocker(this.global);
    this.fakeTimers = new LegacyFakeTimers({
      config: projectConfig,
      global: this.global,
      moduleMocker: this.moduleMocker,
      timerConfig: { idToRef: (id) => ({ id, ref: () => undefined, unref: () => undefined }), refToId: (timer) => timer?.id },
    });
    this.fakeTimersModern = new ModernFakeTimers({ config: projectConfig, global: this.global });
  }

  /** Unlike Jest's own, keeps the context (and what is loaded in it) for the worker's next file. */
  async teardown() {
    this.fakeTimers?.dispose();
    this.fakeTimersModern?.dispose();
    this.fakeTimers = null;
    this.fakeTimersModern = null;
    // TEST_CPU_LOG=<file>: one line per file with the CPU it took, its children's included (how the suite is measured).
    if (process.env.TEST_CPU_LOG)
      appendFileSync(
        process.env.TEST_CPU_LOG,
        `${JSON.stringify({ file: this.testPath, worker: process.pid, cpuMs: Math.round(cpuMillis() - this.cpuAtStart) })}\n`,
      );
  }
}

/** CPU time of this process and of the children it has waited for, in milliseconds. */
function cpuMillis() {
  const { user, system } = process.cpuUsage();
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // cutime and cstime, in clock ticks of 10 ms
  return (user + system) / 1000 + (Number(fields[13]) + Number(fields[14])) * 10;
}

module.exports = WorkerContextEnvironment;
module.exports.isWorkerContext = (context) => context === shared?.context;

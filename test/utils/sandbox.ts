import { missingSandboxPackages } from '../../src/agent/sandbox/sandbox';

/**
 * `it` for tests that run commands in the OS sandbox. CI installs its programs (`.ci/run`) and always
 * runs them; on a machine without them (`npm test` on a fresh machine) they are skipped, with a note.
 */
export function itInSandbox(name: string, fn: () => Promise<void>, timeout?: number): void {
  const missing = missingSandboxPackages();
  if (missing.length === 0 || process.env.CI) return it(name, fn, timeout);
  it.skip(`${name} [skipped: apt-get install ${missing.join(' ')} to run it]`, fn, timeout);
}

/**
 * Whether workers started by tests can sandbox (a worker that cannot refuses to start): CI always can; elsewhere, with
 * the sandbox's programs installed.
 */
export const workersCanSandbox = (): boolean => missingSandboxPackages().length === 0 || Boolean(process.env.CI);

/** `describe` for suites whose workers, started before each test, run computers in the OS sandbox (see itInSandbox). */
export function describeInSandbox(name: string, fn: () => void): void {
  const missing = missingSandboxPackages();
  if (missing.length === 0 || process.env.CI) return describe(name, fn);
  describe.skip(`${name} [skipped: apt-get install ${missing.join(' ')} to run it]`, fn);
}

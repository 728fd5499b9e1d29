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

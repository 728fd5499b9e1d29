/**
 * The demo's readiness reports, evaluated in a process of their own: about 70 git runs, each forked from a
 * small process rather than from the server (whose memory, the embedded database's included, makes every
 * fork from it cost tens of milliseconds on the thread that also runs the database). Prints the reports as JSON.
 */
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { evaluateRepository } from '../modules/readiness/evaluator/evaluate';
import { evaluateSamples, SampleReport } from './readiness-samples';

/** The project's own folder, from `dist/demo/`. */
const PROJECT_ROOT = join(__dirname, '../..');

export interface DemoReadinessReports {
  reports: SampleReport[];
  /** Why this project's own report was left out, if it was. */
  skipped?: string;
}

async function evaluateSamplesOnce(): Promise<SampleReport[]> {
  const folder = await mkdtemp(join(tmpdir(), 'agent-platform-demo-'));
  try {
    return await evaluateSamples(folder);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** This project, evaluated where it runs from when that is a git work tree of its own (a clone; not an installed package). */
async function evaluateProject(): Promise<{ reports: SampleReport[]; skipped?: string }> {
  try {
    const { report, root } = await evaluateRepository(PROJECT_ROOT);
    // Installed inside someone else's repository, the work tree is theirs: not ours to report on.
    if ((await realpath(root)) !== (await realpath(PROJECT_ROOT))) return { reports: [] };
    return { reports: [{ daysAgo: 0, report }] };
  } catch (error) {
    return { reports: [], skipped: (error as Error).message };
  }
}

async function main(): Promise<void> {
  const [samples, own] = await Promise.all([evaluateSamplesOnce(), evaluateProject()]);
  const result: DemoReadinessReports = { reports: [...samples, ...own.reports], skipped: own.skipped };
  process.stdout.write(JSON.stringify(result));
}

main().catch((error: Error) => {
  process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exitCode = 1;
});

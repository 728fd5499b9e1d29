import { Injectable, Logger } from '@nestjs/common';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Principal } from '../modules/auth';
import { evaluateRepository, ReadinessService } from '../modules/readiness';
import { evaluateSamples, SampleReport } from './readiness-samples';

const DAY_MS = 86_400_000;
/** The project's own folder, from `dist/demo/` or `src/demo/`. */
const PROJECT_ROOT = join(__dirname, '../..');

/**
 * Readiness reports for acme, all made by the real evaluator at seed time: its sample repositories'
 * history over the last two months (built and committed step by step in a temporary folder, see
 * readiness-samples.ts), and this project's own folder as it is now. Only an organization without
 * reports gets them.
 */
@Injectable()
export class DemoReadiness {
  private readonly logger = new Logger(DemoReadiness.name);

  constructor(private readonly readiness: ReadinessService) {}

  /** Runs beside the rest of the seeding: its git runs use the other core while the database works. */
  async seedAcme(uploader: Principal): Promise<void> {
    if ((await this.readiness.list(uploader, { limit: 1 })).length > 0) return;
    const [samples, own] = await Promise.all([evaluateSamplesOnce(), evaluateProject(this.logger)]);
    const now = Date.now();
    // Oldest first, so report times and ids agree.
    for (const { daysAgo, report } of [...samples, ...own]) {
      await this.readiness.upload(uploader, report, new Date(now - daysAgo * DAY_MS));
    }
  }
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
async function evaluateProject(logger: Logger): Promise<SampleReport[]> {
  try {
    const { report, root } = await evaluateRepository(PROJECT_ROOT);
    // Installed inside someone else's repository, the work tree is theirs: not ours to report on.
    if ((await realpath(root)) !== (await realpath(PROJECT_ROOT))) return [];
    return [{ daysAgo: 0, report }];
  } catch (error) {
    logger.log(`This project's own readiness report skipped: ${(error as Error).message}`);
    return [];
  }
}

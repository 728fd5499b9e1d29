import { Injectable, Logger } from '@nestjs/common';
import { realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { Principal } from '../modules/auth';
import { evaluateRepository, ReadinessService } from '../modules/readiness';
import { SAMPLE_REPORTS } from './readiness-samples.data';

const DAY_MS = 86_400_000;
/** The project's own folder, from `dist/demo/` or `src/demo/`. */
const PROJECT_ROOT = join(__dirname, '../..');

/**
 * Readiness reports for acme, all made by the real evaluator: its sample repositories' history
 * over the last two months (evaluated ahead of time, see readiness-samples.ts, as a seed cannot
 * afford 70 git runs), and this project's own folder as it is now, evaluated at seed time. Only
 * an organization without reports gets them.
 */
@Injectable()
export class DemoReadiness {
  private readonly logger = new Logger(DemoReadiness.name);

  constructor(private readonly readiness: ReadinessService) {}

  /** Runs beside the rest of the seeding: its git runs use the other core while the database works. */
  async seedAcme(uploader: Principal): Promise<void> {
    if ((await this.readiness.list(uploader, { limit: 1 })).length > 0) return;
    const own = await evaluateProject(this.logger);
    const now = Date.now();
    // Oldest first, so report times and ids agree.
    for (const { daysAgo, report } of [...SAMPLE_REPORTS, ...own]) {
      await this.readiness.upload(uploader, report, new Date(now - daysAgo * DAY_MS));
    }
  }
}

type SampleReportLike = (typeof SAMPLE_REPORTS)[number];

/** This project, evaluated where it runs from when that is a git work tree of its own (a clone; not an installed package). */
async function evaluateProject(logger: Logger): Promise<SampleReportLike[]> {
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

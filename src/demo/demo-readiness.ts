import { Injectable, Logger } from '@nestjs/common';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Principal } from '../modules/auth';
import { ReadinessService } from '../modules/readiness';
import type { DemoReadinessReports } from './readiness-reports.main';

const DAY_MS = 86_400_000;
const REPORTS_MAIN = join(__dirname, 'readiness-reports.main.js');

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

  /** Runs beside the rest of the seeding: its git runs, in a process of their own, use the other core while the database works. */
  async seedAcme(uploader: Principal): Promise<void> {
    if ((await this.readiness.list(uploader, { limit: 1 })).length > 0) return;
    const { stdout } = await promisify(execFile)(process.execPath, [REPORTS_MAIN], { maxBuffer: 64 * 1024 * 1024 });
    const { reports, skipped } = JSON.parse(stdout) as DemoReadinessReports;
    if (skipped) this.logger.log(`This project's own readiness report skipped: ${skipped}`);
    const now = Date.now();
    // Oldest first, so report times and ids agree.
    for (const { daysAgo, report } of reports) {
      await this.readiness.upload(uploader, report, new Date(now - daysAgo * DAY_MS));
    }
  }
}

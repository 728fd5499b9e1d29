import { Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { MembersService } from '../auth';
import { TokenUsageReader } from '../sessions';
import { AnalyticsRepository } from './analytics.repository';
import { rollUpDay } from './domain/day-rollup';
import { tokensDay, UserModelUsage } from './domain/token-rows';

export interface RollupResult {
  /** Days (organization and date) rolled up, in order. */
  days: Array<{ organizationId: string; day: string }>;
}

/**
 * The daily rollup: finds the days that got facts since the last run (late ones included), then
 * recomputes each closed day from all its facts, one transaction per day. Recomputing is
 * idempotent, and instances never roll up the same day at once (claims skip locked rows).
 */
@Injectable()
export class AnalyticsRollupService {
  private readonly logger = new Logger(AnalyticsRollupService.name);

  constructor(
    private readonly repository: AnalyticsRepository,
    private readonly tokenUsage: TokenUsageReader,
    private readonly members: MembersService,
  ) {}

  /** Rolls up every dirty day before today (UTC), of one organization or of all; `shouldStop` ends it between days. */
  async run(options: { organizationId?: string; now?: Date; shouldStop?: () => boolean } = {}): Promise<RollupResult> {
    const today = (options.now ?? new Date()).toISOString().slice(0, 10);
    await this.repository.markDirtyDays();
    const days: RollupResult['days'] = [];
    while (!options.shouldStop?.()) {
      const done = await this.repository.transaction(async (manager) => {
        const claimed = await this.repository.claimDirtyDay(manager, today, options.organizationId);
        if (!claimed) return null;
        const { facts, sessionsWithMessages } = await this.repository.dayFacts(manager, claimed.organizationId, claimed.day);
        const usage = await this.usageOfDay(manager, claimed.organizationId, claimed.day);
        await this.repository.writeDay(
          manager,
          claimed.organizationId,
          claimed.day,
          rollUpDay(facts, usage, sessionsWithMessages),
          tokensDay(claimed.day, usage),
        );
        return claimed;
      });
      if (!done) break;
      days.push(done);
    }
    if (days.length > 0) this.logger.log(`Rolled up ${days.length} analytics day(s)`);
    return { days };
  }

  /** The day's token usage (Sessions') with each user's email (Auth's), read in the rollup's transaction. */
  private async usageOfDay(manager: EntityManager, organizationId: string, day: string): Promise<UserModelUsage[]> {
    const usage = await this.tokenUsage.ofDay(organizationId, day, manager);
    const emails = await this.members.emailsOf(
      organizationId,
      usage.map((row) => row.userId),
      manager,
    );
    return usage.map((row) => ({ ...row, userEmail: emails.get(row.userId) ?? null }));
  }
}

import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DailyTokenUsage, TokenUsageRepository } from './token-usage.repository';

/**
 * What other modules may read of the tokens sessions used, kept per organization, UTC day, user and model as
 * agents report them: Analytics' rollup reads a day of it, in its own transaction.
 */
@Injectable()
export class TokenUsageReader {
  constructor(private readonly repository: TokenUsageRepository) {}

  /** The organization's usage of `day` (YYYY-MM-DD), one row per user and model; with `manager`, in that transaction. */
  ofDay(organizationId: string, day: string, manager?: EntityManager): Promise<DailyTokenUsage[]> {
    return this.repository.ofDay(organizationId, day, manager);
  }
}

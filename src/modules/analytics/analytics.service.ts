import { Injectable } from '@nestjs/common';
import { Principal } from '../auth';
import { AnalyticsRepository } from './analytics.repository';
import { DateRange } from './domain/date-range';
import { tokensByModel, tokensRows, TokensByModelRow, TokensRow } from './domain/token-rows';

export interface AnalyticsMeta {
  org_id: string;
  start_date: string;
  end_date: string;
}

/** The v1 analytics: projections of the platform's own activity, per closed UTC day. */
@Injectable()
export class AnalyticsService {
  constructor(private readonly repository: AnalyticsRepository) {}

  async tokens(principal: Principal, range: DateRange, groupBy?: 'model'): Promise<{ data: TokensRow[] | TokensByModelRow[]; meta: AnalyticsMeta }> {
    const facts = range.days.length === 0 ? [] : await this.repository.tokenUsage(principal.organizationId, range.days[0], range.end);
    const rows = tokensRows(range.days, facts);
    return { data: groupBy === 'model' ? tokensByModel(rows) : rows, meta: { org_id: principal.organizationId, start_date: range.start, end_date: range.end } };
  }
}

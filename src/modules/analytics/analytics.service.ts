import { Injectable } from '@nestjs/common';
import { MembersService, Principal } from '../auth';
import { isUuid } from '../../platform/database/ids';
import { validationError } from '../../platform/http/validation';
import { AnalyticsRepository, StoredDay } from './analytics.repository';
import { AnalyticsRollupJob } from './jobs/analytics-rollup.job';
import { DateRange } from './domain/date-range';
import {
  ActivityByClientRow,
  activityByClient,
  ActivityRow,
  activityRows,
  daysBefore,
  EMPTY_PRODUCTIVITY,
  EMPTY_TOOLS,
  perDay,
  ProductivityRow,
  toolsByName,
  ToolsByNameRow,
  ToolsRow,
  UserRow,
} from './domain/rows';
import { tokensByModel, tokensDay, TokensByModelRow, TokensRow } from './domain/token-rows';

export interface AnalyticsMeta {
  org_id: string;
  start_date: string;
  end_date: string;
}

export interface UsersMeta extends AnalyticsMeta {
  has_more: boolean;
  next_cursor: string | null;
}

export interface Envelope<T, M = AnalyticsMeta> {
  data: T[];
  meta: M;
}

/** The v1 analytics: projections of the platform's own activity, per closed UTC day. */
@Injectable()
export class AnalyticsService {
  constructor(
    private readonly repository: AnalyticsRepository,
    private readonly rollup: AnalyticsRollupJob,
    private readonly members: MembersService,
  ) {}

  /**
   * The tokens answer as JSON text, joined from the days' rows as the rollup stored them: a 90-day range of a busy
   * organization is megabytes, and parsing and serializing it again cost more than everything else the request does.
   */
  async tokens(principal: Principal, range: DateRange): Promise<string> {
    const stored = new Map((await this.tokenDays(principal, range)).map((row) => [row.day, row.tokens]));
    const rows = range.days.map((day) => stored.get(day) ?? JSON.stringify(tokensDay(day, [])));
    return `{"data":[${rows.join(',')}],"meta":${JSON.stringify(meta(principal, range))}}`;
  }

  async tokensByModel(principal: Principal, range: DateRange): Promise<Envelope<TokensByModelRow>> {
    const stored = new Map((await this.tokenDays(principal, range)).map((row) => [row.day, JSON.parse(row.tokens) as TokensRow]));
    const rows = range.days.map((day) => stored.get(day) ?? tokensDay(day, []));
    return { data: tokensByModel(rows), meta: meta(principal, range) };
  }

  private tokenDays(principal: Principal, range: DateRange) {
    return range.days.length === 0 ? Promise.resolve([]) : this.repository.tokenDays(principal.organizationId, range.days[0], range.end);
  }

  async tools(principal: Principal, range: DateRange, groupBy?: 'tool_name'): Promise<Envelope<ToolsRow | ToolsByNameRow>> {
    const stored = await this.storedDays(principal, range);
    const rows = perDay(range.days, part(stored, 'tools'), EMPTY_TOOLS);
    return { data: groupBy === 'tool_name' ? toolsByName(rows) : rows, meta: meta(principal, range) };
  }

  async activity(principal: Principal, range: DateRange, groupBy?: 'client'): Promise<Envelope<ActivityRow | ActivityByClientRow>> {
    if (range.days.length === 0) return { data: [], meta: meta(principal, range) };
    const [stored, active] = await Promise.all([
      this.storedDays(principal, range),
      this.repository.activeUsers(principal.organizationId, daysBefore(range.days[0], 29), range.end),
    ]);
    const rows = activityRows(range.days, part(stored, 'activity'), active);
    return { data: groupBy === 'client' ? activityByClient(rows) : rows, meta: meta(principal, range) };
  }

  async productivity(principal: Principal, range: DateRange): Promise<Envelope<ProductivityRow>> {
    const stored = await this.storedDays(principal, range);
    return { data: perDay(range.days, part(stored, 'productivity'), EMPTY_PRODUCTIVITY), meta: meta(principal, range) };
  }

  /**
   * A page of users (`limit` users, in user-id order) with one row per day each was active in the
   * range; `next_cursor` is the page's last user id while more users follow.
   */
  async users(principal: Principal, range: DateRange, page: { limit: number; cursor?: string }): Promise<Envelope<UserRow, UsersMeta>> {
    if (page.cursor !== undefined && !isUuid(page.cursor)) {
      throw validationError([{ field: 'cursor', message: 'must be a user id taken from meta.next_cursor' }]);
    }
    const none = { data: [], meta: { ...meta(principal, range), has_more: false, next_cursor: null } };
    if (range.days.length === 0) return none;
    const ids = await this.repository.usersWithDays(principal.organizationId, range.days[0], range.end, page.cursor?.toLowerCase() ?? null, page.limit + 1);
    const hasMore = ids.length > page.limit;
    const pageIds = ids.slice(0, page.limit);
    // The emails are Auth's: asked for beside the days, not after them.
    const [days, emails] = await Promise.all([
      this.repository.userDays(principal.organizationId, pageIds, range.days[0], range.end),
      this.members.emailsOf(principal.organizationId, pageIds),
    ]);
    return {
      data: days.map((row) => ({ user_id: row.userId, user_email: emails.get(row.userId) ?? null, date: row.day, ...row.metrics })),
      meta: { ...meta(principal, range), has_more: hasMore, next_cursor: hasMore ? pageIds[pageIds.length - 1] : null },
    };
  }

  /** Rolls up the organization's closed days that have new facts, now. */
  async rollUp(principal: Principal): Promise<{ data: { rolled_up_days: string[] }; meta: { org_id: string } }> {
    const { days } = await this.rollup.runNow(principal.organizationId);
    return { data: { rolled_up_days: days.map((d) => d.day) }, meta: { org_id: principal.organizationId } };
  }

  private async storedDays(principal: Principal, range: DateRange): Promise<Map<string, StoredDay>> {
    if (range.days.length === 0) return new Map();
    const rows = await this.repository.days(principal.organizationId, range.days[0], range.end);
    return new Map(rows.map((row) => [row.day, row]));
  }
}

/** One endpoint's part of the stored days, by day. */
function part<K extends 'tools' | 'activity' | 'productivity'>(stored: Map<string, StoredDay>, key: K): Map<string, StoredDay[K]> {
  return new Map([...stored].map(([day, row]) => [day, row[key]]));
}

function meta(principal: Principal, range: DateRange): AnalyticsMeta {
  return { org_id: principal.organizationId, start_date: range.start, end_date: range.end };
}

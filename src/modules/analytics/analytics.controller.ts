import { Controller, Get, Header, HttpCode, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Authenticated, CurrentPrincipal, Principal, Role } from '../auth';
import { ANALYTICS_ERROR } from '../../platform/http/openapi';
import { AnalyticsService } from './analytics.service';
import { parseRange } from './domain/date-range';
import { ActivityQuery, analyticsSchemas, DateRangeQuery, TokensQuery, ToolsQuery, UsersQuery } from './analytics-queries';
// Registers the answers' schemas (AnalyticsTokensResponse...) the routes below publish.
import './analytics.schemas';
import { pageSize } from '../../platform/http/pagination';
import { QuerySchema, ref } from '../../platform/http/json-schema';

const ROLLUP_NOTE = 'Rows come from the daily rollup of closed days (see POST /api/v1/analytics/rollup); definitions in docs/analytics.md.';

/** Organization usage analytics (spec, Analytics): managers and owners only. */
@ApiTags('Analytics')
@Controller('api/v1/analytics')
@Authenticated(Role.Owner, Role.Manager)
@ApiBadRequestResponse({
  description: 'A date missing, malformed, after the other, today or later; an unknown group_by; limit outside 1-100; a cursor that is not a user id.',
  schema: ANALYTICS_ERROR,
})
export class AnalyticsController {
  constructor(private readonly analytics: AnalyticsService) {}

  @Get('tokens')
  @ApiOperation({
    summary: 'Token usage',
    description:
      'One row per day of the range (every day, zeros on quiet ones), with `by_model` and `by_user` (largest first). ' +
      '`billable_tokens` = input + output + 125% of cache writes + 10% of cache reads (rounded down per day, user and model); thinking tokens count as output. ' +
      "A model's `model_tier` is `thinking` on days it spent thinking tokens, else `standard`. With `group_by=model`, rows `{date, group_key, billable_tokens, input_tokens, output_tokens}` " +
      'for each model used that day; they sum to the ungrouped totals. ' +
      ROLLUP_NOTE,
  })
  @ApiOkResponse({ schema: ref('AnalyticsTokensResponse') })
  // The ungrouped answer is JSON text already (see AnalyticsService.tokens).
  @Header('content-type', 'application/json; charset=utf-8')
  tokens(@CurrentPrincipal() principal: Principal, @QuerySchema(analyticsSchemas, 'TokensQuery') query: TokensQuery) {
    const range = parseRange(query.startDate, query.endDate);
    return query.group_by === 'model' ? this.analytics.tokensByModel(principal, range) : this.analytics.tokens(principal, range);
  }

  @Get('tools')
  @ApiOperation({
    summary: 'Tool usage',
    description:
      'One row per day: tool calls by tool, MCP servers (names folded to lower case), skills, slash commands, hooks (one per command run), ' +
      'web users, the autonomy ratio (tool calls per user turn) over users with a turn that day (average, nearest-rank p50 and p90), ' +
      'tool calls and user turns per session that had messages that day, and the share of tool calls at each autonomy level. ' +
      'With `group_by=tool_name`, rows `{date, group_key, tool_calls}` for each tool used that day. ' +
      ROLLUP_NOTE,
  })
  @ApiOkResponse({ schema: ref('AnalyticsToolsResponse') })
  tools(@CurrentPrincipal() principal: Principal, @QuerySchema(analyticsSchemas, 'ToolsQuery') query: ToolsQuery) {
    return this.analytics.tools(principal, parseRange(query.startDate, query.endDate), query.group_by);
  }

  @Get('activity')
  @ApiOperation({
    summary: 'User activity',
    description:
      "One row per day. A user is active on a day they sent a user message; daily, weekly (7 days ending on the row's date) and monthly (30 days) " +
      'active users count each user once whatever the clients; `daily_active_users_by_client` counts them per client type (a user on two clients is in both). ' +
      'Clients: `terminal-ui` (cli_tui, cli_acp), `web` (web, desktop), `non-interactive-cli` (everything else, including the Sessions API). ' +
      '`sessions`: sessions started; `messages`: user plus assistant messages. With `group_by=client`, rows `{date, group_key, daily_active_users}` per client with active users. ' +
      ROLLUP_NOTE,
  })
  @ApiOkResponse({ schema: ref('AnalyticsActivityResponse') })
  activity(@CurrentPrincipal() principal: Principal, @QuerySchema(analyticsSchemas, 'ActivityQuery') query: ActivityQuery) {
    return this.analytics.activity(principal, parseRange(query.startDate, query.endDate), query.group_by);
  }

  @Get('productivity')
  @ApiOperation({
    summary: 'Productivity',
    description:
      "One row per day: files created and edited by agent tools, by extension (lower case, no dot; `(none)`) and by language (GitHub Linguist's table; `Other`), " +
      'commits and pull requests made through agent tools. ' +
      ROLLUP_NOTE,
  })
  @ApiOkResponse({ schema: ref('AnalyticsProductivityResponse') })
  productivity(@CurrentPrincipal() principal: Principal, @QuerySchema(analyticsSchemas, 'DateRangeQuery') query: DateRangeQuery) {
    return this.analytics.productivity(principal, parseRange(query.startDate, query.endDate));
  }

  @Get('users')
  @ApiOperation({
    summary: 'Per-user metrics',
    description:
      'A page of `limit` users (1-100, default 20) in user-id order, each with one row per day of the range it has activity, by user then date. ' +
      "While `meta.has_more` is true, send `meta.next_cursor` (the page's last user id) as `cursor` with the same dates and limit; every user appears on exactly one page. " +
      "Rows of one day sum to that day's totals on the other endpoints. " +
      ROLLUP_NOTE,
  })
  @ApiOkResponse({ schema: ref('AnalyticsUsersResponse') })
  users(@CurrentPrincipal() principal: Principal, @QuerySchema(analyticsSchemas, 'UsersQuery') query: UsersQuery) {
    return this.analytics.users(principal, parseRange(query.startDate, query.endDate), { limit: pageSize(query), cursor: query.cursor });
  }

  @Post('rollup')
  @HttpCode(200)
  @Authenticated(Role.Owner)
  @ApiOperation({
    summary: 'Roll up now (added; owners only)',
    description:
      "Rolls up the organization's closed days (before today, UTC) that have facts not yet rolled up, including late facts for days rolled up before, " +
      'and answers the dates it rolled up. The rollup also runs at start-up and every ANALYTICS_ROLLUP_MS (10 minutes by default). Idempotent: a second call rolls up nothing new.',
  })
  @ApiOkResponse({ schema: ref('AnalyticsRollupResponse') })
  rollUp(@CurrentPrincipal() principal: Principal) {
    return this.analytics.rollUp(principal);
  }
}

import { Controller, Get, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Authenticated, CurrentPrincipal, Principal, Role } from '../auth';
import { RequestIdErrorSchema } from '../../platform/http/openapi';
import { AnalyticsMeta, AnalyticsService } from './analytics.service';
import { parseRange } from './domain/date-range';
import { TokensByModelRow, TokensRow } from './domain/token-rows';
import { TokensQueryDto } from './dto/analytics-query.dto';
import { ANALYTICS_SCHEMAS } from './analytics.schemas';

/** Organization usage analytics (spec, Analytics): managers and owners only. */
@ApiTags('Analytics')
@Controller('api/v1/analytics')
@Authenticated(Role.Owner, Role.Manager)
@ApiBadRequestResponse({ description: 'A date missing, malformed, after the other, today or later; an unknown group_by.', type: RequestIdErrorSchema })
export class AnalyticsController {
  constructor(private readonly analytics: AnalyticsService) {}

  @Get('tokens')
  @ApiOperation({
    summary: 'Token usage',
    description:
      'One row per day of the range (every day, zeros on quiet ones), with `by_model` and `by_user` (largest first). ' +
      '`billable_tokens` = input + output + 125% of cache writes + 10% of cache reads (rounded down per day, user and model); thinking tokens count as output. ' +
      'A model\'s `model_tier` is `thinking` on days it spent thinking tokens, else `standard`. With `group_by=model`, rows `{date, group_key, billable_tokens, input_tokens, output_tokens}` ' +
      'for each model used that day; they sum to the ungrouped totals.',
  })
  @ApiOkResponse({ schema: ANALYTICS_SCHEMAS.tokensResponse })
  tokens(@CurrentPrincipal() principal: Principal, @Query() query: TokensQueryDto): Promise<{ data: TokensRow[] | TokensByModelRow[]; meta: AnalyticsMeta }> {
    return this.analytics.tokens(principal, parseRange(query.startDate, query.endDate), query.group_by);
  }
}

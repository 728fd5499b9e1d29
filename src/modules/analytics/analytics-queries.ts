import type { ApiSchema } from '../../platform/http/api-schema';
import { closedObject, SchemaObject, SchemaRegistry } from '../../platform/http/json-schema';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../../platform/http/pagination';
import { HISTORY_START, MAX_RANGE_DAYS } from './domain/date-range';

/** `startDate` and `endDate` of every analytics endpoint; their rules are checked by `parseRange`. */
const dateRange: Record<string, SchemaObject> = {
  startDate: {
    type: 'string',
    format: 'date',
    'x-problem': 'must be a date in YYYY-MM-DD format',
    'x-required': 'a day as YYYY-MM-DD, UTC',
    example: '2026-01-14',
    description: `YYYY-MM-DD, UTC. Data starts on ${HISTORY_START}: days before it are not answered.`,
  },
  endDate: {
    type: 'string',
    format: 'date',
    'x-problem': 'must be a date in YYYY-MM-DD format',
    'x-required': 'a day as YYYY-MM-DD, UTC',
    example: '2026-01-28',
    description: `YYYY-MM-DD, UTC, before today (data covers closed days). At most ${MAX_RANGE_DAYS} days after startDate.`,
  },
};

const DATES = ['startDate', 'endDate'];

const groupBy = (value: string, description: string): SchemaObject => ({ type: 'string', enum: [value], 'x-problem': `must be ${value}`, description });

/**
 * The analytics query strings. The dates' shape is checked here; whether they are real days, in order
 * and in range, by `parseRange`.
 */
export const analyticsSchemas = new SchemaRegistry('analytics').add({
  DateRangeQuery: closedObject(DATES, dateRange),
  TokensQuery: closedObject(DATES, {
    ...dateRange,
    group_by: groupBy('model', 'Flatten `by_model` into rows `{date, group_key, billable_tokens, input_tokens, output_tokens}`.'),
  }),
  ToolsQuery: closedObject(DATES, { ...dateRange, group_by: groupBy('tool_name', 'Flatten `by_tool` into rows `{date, group_key, tool_calls}`.') }),
  ActivityQuery: closedObject(DATES, {
    ...dateRange,
    group_by: groupBy('client', 'Rows `{date, group_key, daily_active_users}`, one per client type with active users that day.'),
  }),
  UsersQuery: closedObject(DATES, {
    ...dateRange,
    limit: {
      type: 'string',
      pattern: '^(100|[1-9][0-9]?)$',
      'x-problem': 'must be a whole number from 1 to 100',
      default: String(DEFAULT_PAGE_LIMIT),
      description: `Users per page (each with a row per day it was active). 1-${MAX_PAGE_LIMIT}; anything else answers 400.`,
    },
    cursor: { type: 'string', maxLength: 64, description: 'A user id: `meta.next_cursor` of the previous page, with the same dates and limit.' },
  }),
});

export type DateRangeQuery = ApiSchema<'DateRangeQuery'>;
export type TokensQuery = ApiSchema<'TokensQuery'>;
export type ToolsQuery = ApiSchema<'ToolsQuery'>;
export type ActivityQuery = ApiSchema<'ActivityQuery'>;
export type UsersQuery = ApiSchema<'UsersQuery'>;

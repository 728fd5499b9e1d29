import { ref, SchemaObject } from '../../platform/http/json-schema';
import { analyticsSchemas } from './analytics-queries';

/**
 * The answers' shapes, as the reference service publishes them, in the module's registry: published under these names,
 * and the rows' TypeScript types generated from them (domain/rows.ts, domain/token-rows.ts).
 */
const modelBreakdown = {
  type: 'object',
  required: ['model_id', 'model_tier', 'billable_tokens', 'input_tokens', 'output_tokens'],
  properties: {
    model_id: { type: 'string' },
    model_tier: { type: 'string', enum: ['standard', 'thinking'] },
    billable_tokens: { type: 'number' },
    input_tokens: { type: 'number' },
    output_tokens: { type: 'number' },
  },
};

const meta = {
  type: 'object',
  required: ['org_id', 'start_date', 'end_date'],
  properties: { org_id: { type: 'string' }, start_date: { type: 'string', format: 'date' }, end_date: { type: 'string', format: 'date' } },
};

const tokensRow = {
  type: 'object',
  required: ['date', 'billable_tokens', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'by_model', 'by_user'],
  properties: {
    date: { type: 'string', format: 'date' },
    billable_tokens: { type: 'number' },
    input_tokens: { type: 'number' },
    output_tokens: { type: 'number' },
    cache_read_tokens: { type: 'number' },
    cache_write_tokens: { type: 'number' },
    by_model: { type: 'array', items: modelBreakdown },
    by_user: {
      type: 'array',
      items: {
        type: 'object',
        required: ['user_id', 'user_email', 'billable_tokens', 'by_model'],
        properties: {
          user_id: { type: 'string' },
          user_email: { type: 'string', nullable: true },
          billable_tokens: { type: 'number' },
          by_model: { type: 'array', items: modelBreakdown },
        },
      },
    },
  },
};

const tokensByModelRow = {
  type: 'object',
  required: ['date', 'group_key', 'billable_tokens', 'input_tokens', 'output_tokens'],
  properties: {
    date: { type: 'string', format: 'date' },
    group_key: { type: 'string' },
    billable_tokens: { type: 'number' },
    input_tokens: { type: 'number' },
    output_tokens: { type: 'number' },
  },
};

const num = { type: 'number' };
const str = { type: 'string' };
const date = { type: 'string', format: 'date' };
const object = (properties: Record<string, SchemaObject>): SchemaObject => ({ type: 'object', required: Object.keys(properties), properties });
const list = (items: SchemaObject): SchemaObject => ({ type: 'array', items });

const toolsRow = object({
  date,
  tool_calls: num,
  by_tool: list(object({ tool: str, invocations: num })),
  mcp_users_with_mcp: num,
  mcp_by_server: list(object({ server: str, invocations: num })),
  skills_invocations: num,
  skills_by_name: list(object({ name: str, count: num })),
  slash_commands_invocations: num,
  slash_commands_by_name: list(object({ name: str, count: num })),
  hooks_invocations: num,
  hooks_by_event: list(object({ event: str, matcher: str, command: str, count: num })),
  web_users: num,
  autonomy_ratio_avg: num,
  autonomy_ratio_p50: num,
  autonomy_ratio_p90: num,
  tool_calls_per_session_avg: num,
  user_turns_per_session_avg: num,
  tool_autonomy_level_ratio: object({ auto_high: num, auto_medium: num, auto_low: num, manual: num }),
});

const clients = object({ 'terminal-ui': num, web: num, 'non-interactive-cli': num });
const activityRow = object({
  date,
  daily_active_users: num,
  weekly_active_users: num,
  monthly_active_users: num,
  daily_active_users_by_client: clients,
  sessions: num,
  messages: num,
  user_messages: num,
});

const productivityRow = object({
  date,
  files_created: num,
  files_edited: num,
  by_extension: list(object({ extension: str, count: num })),
  by_language: list(object({ language: str, count: num })),
  git_commits: num,
  git_prs_created: num,
});

const userRow = object({
  user_id: str,
  user_email: { type: 'string', nullable: true },
  date,
  tool_calls: num,
  billable_tokens: num,
  primary_model: str,
  primary_model_tier: { type: 'string', enum: ['standard', 'thinking'] },
  files_created: num,
  files_edited: num,
  git_commits: num,
  git_prs_created: num,
  mcp_calls: num,
  skill_calls: num,
  slash_commands: num,
  hooks: num,
  sessions: num,
  messages: num,
  user_messages: num,
  assistant_messages: num,
  autonomy_ratio: num,
  delegation_level: { type: 'string', enum: ['auto-high', 'auto-medium', 'auto-low', 'spec', 'manual'] },
  languages: list(str),
});

const usersMeta: SchemaObject = {
  type: 'object',
  required: [...meta.required, 'has_more', 'next_cursor'],
  properties: {
    ...meta.properties,
    has_more: { type: 'boolean' },
    next_cursor: { type: 'string', nullable: true, description: 'The last user id of this page while more follow; null on the last page.' },
  },
};

const envelope = (...rows: SchemaObject[]): SchemaObject => ({
  type: 'object',
  required: ['data', 'meta'],
  properties: { data: list(rows.length === 1 ? rows[0] : { oneOf: rows }), meta: ref('AnalyticsMeta') },
});

analyticsSchemas.add({
  AnalyticsMeta: meta,
  AnalyticsUsersMeta: usersMeta,
  AnalyticsTokensRow: tokensRow,
  AnalyticsTokensByModelRow: tokensByModelRow,
  AnalyticsToolsRow: toolsRow,
  AnalyticsToolsByNameRow: object({ date, group_key: str, tool_calls: num }),
  AnalyticsActivityRow: activityRow,
  AnalyticsActivityByClientRow: object({ date, group_key: { type: 'string', enum: ['terminal-ui', 'web', 'non-interactive-cli'] }, daily_active_users: num }),
  AnalyticsProductivityRow: productivityRow,
  AnalyticsUserRow: userRow,
  AnalyticsTokensResponse: envelope(ref('AnalyticsTokensRow'), ref('AnalyticsTokensByModelRow')),
  AnalyticsToolsResponse: envelope(ref('AnalyticsToolsRow'), ref('AnalyticsToolsByNameRow')),
  AnalyticsActivityResponse: envelope(ref('AnalyticsActivityRow'), ref('AnalyticsActivityByClientRow')),
  AnalyticsProductivityResponse: envelope(ref('AnalyticsProductivityRow')),
  AnalyticsUsersResponse: { type: 'object', required: ['data', 'meta'], properties: { data: list(ref('AnalyticsUserRow')), meta: ref('AnalyticsUsersMeta') } },
  AnalyticsRollupResponse: object({ data: object({ rolled_up_days: list(date) }), meta: object({ org_id: str }) }),
});

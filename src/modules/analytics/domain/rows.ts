import type { ApiSchema } from '../../../platform/http/api-schema';
import { AUTONOMY_LEVELS, CLIENT_TYPES, ClientType } from './facts';
import { ActivityDay, ProductivityDay, ToolsDay } from './day-rollup';

const DAY_MS = 86_400_000;

/** The day `n` days before `day` (YYYY-MM-DD). */
export function daysBefore(day: string, n: number): string {
  return new Date(Date.parse(day) - n * DAY_MS).toISOString().slice(0, 10);
}

export const EMPTY_TOOLS: ToolsDay = {
  tool_calls: 0,
  by_tool: [],
  mcp_users_with_mcp: 0,
  mcp_by_server: [],
  skills_invocations: 0,
  skills_by_name: [],
  slash_commands_invocations: 0,
  slash_commands_by_name: [],
  hooks_invocations: 0,
  hooks_by_event: [],
  web_users: 0,
  autonomy_ratio_avg: 0,
  autonomy_ratio_p50: 0,
  autonomy_ratio_p90: 0,
  tool_calls_per_session_avg: 0,
  user_turns_per_session_avg: 0,
  tool_autonomy_level_ratio: Object.fromEntries(AUTONOMY_LEVELS.map((level) => [level, 0])) as ToolsDay['tool_autonomy_level_ratio'],
};

export const EMPTY_ACTIVITY: ActivityDay = { sessions: 0, messages: 0, user_messages: 0 };

export const EMPTY_PRODUCTIVITY: ProductivityDay = { files_created: 0, files_edited: 0, by_extension: [], by_language: [], git_commits: 0, git_prs_created: 0 };

/** The endpoints' rows, as their published schemas describe them (analytics.schemas.ts). */
export type ToolsRow = ApiSchema<'AnalyticsToolsRow'>;
export type ToolsByNameRow = ApiSchema<'AnalyticsToolsByNameRow'>;
export type ActivityRow = ApiSchema<'AnalyticsActivityRow'>;
export type ActivityByClientRow = ApiSchema<'AnalyticsActivityByClientRow'>;
export type ProductivityRow = ApiSchema<'AnalyticsProductivityRow'>;
export type UserRow = ApiSchema<'AnalyticsUserRow'>;

/** Every day of the range, the stored rollup or the quiet-day row. */
export function perDay<T>(days: string[], stored: Map<string, T>, empty: T): Array<{ date: string } & T> {
  return days.map((date) => ({ date, ...(stored.get(date) ?? empty) }));
}

/** `group_by=tool_name`: `by_tool` flattened into rows (only tools used that day). */
export function toolsByName(rows: ToolsRow[]): ToolsByNameRow[] {
  return rows.flatMap((row) => row.by_tool.map((tool) => ({ date: row.date, group_key: tool.tool, tool_calls: tool.invocations })));
}

/**
 * Activity rows: sessions and messages from the rollups; active users counted from the users active
 * each day (a user counts once however many clients): DAU that day, WAU over the 7 days ending on
 * it, MAU over the 30 days. `active` must cover the 29 days before the first day.
 */
export function activityRows(
  days: string[],
  stored: Map<string, ActivityDay>,
  active: Array<{ day: string; userId: string; clients: string[] }>,
): ActivityRow[] {
  const byDay = new Map<string, Array<{ userId: string; clients: string[] }>>();
  for (const row of active) (byDay.get(row.day) ?? byDay.set(row.day, []).get(row.day)!).push(row);
  const windowCount = (window: number) => {
    // A sliding window over days: each user's number of active days inside it.
    const inside = new Map<string, number>();
    const move = (day: string, delta: number) => {
      for (const { userId } of byDay.get(day) ?? []) {
        const n = (inside.get(userId) ?? 0) + delta;
        if (n === 0) inside.delete(userId);
        else inside.set(userId, n);
      }
    };
    const counts = new Map<string, number>();
    if (days.length === 0) return counts;
    for (let i = window - 1; i >= 1; i--) move(daysBefore(days[0], i), 1);
    for (const day of days) {
      move(day, 1);
      counts.set(day, inside.size);
      move(daysBefore(day, window - 1), -1);
    }
    return counts;
  };
  const weekly = windowCount(7);
  const monthly = windowCount(30);
  return days.map((date) => {
    const users = byDay.get(date) ?? [];
    const byClient = Object.fromEntries(CLIENT_TYPES.map((client) => [client, users.filter((u) => u.clients.includes(client)).length])) as Record<
      ClientType,
      number
    >;
    return {
      date,
      daily_active_users: users.length,
      weekly_active_users: weekly.get(date) ?? 0,
      monthly_active_users: monthly.get(date) ?? 0,
      daily_active_users_by_client: byClient,
      ...(stored.get(date) ?? EMPTY_ACTIVITY),
    };
  });
}

/** `group_by=client`: one row per client type with active users that day. */
export function activityByClient(rows: ActivityRow[]): ActivityByClientRow[] {
  return rows.flatMap((row) =>
    CLIENT_TYPES.filter((client) => row.daily_active_users_by_client[client] > 0).map((client) => ({
      date: row.date,
      group_key: client,
      daily_active_users: row.daily_active_users_by_client[client],
    })),
  );
}

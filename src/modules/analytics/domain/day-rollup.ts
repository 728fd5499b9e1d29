import type { ApiSchema } from '../../../platform/http/api-schema';
import type { DailyTokenUsage } from '../../sessions';
import { billableTokens } from './billing';
import { AUTONOMY_LEVELS, AutonomyLevel, ClientType, DELEGATION_LEVELS, DelegationLevel, FactKind } from './facts';

/** Facts of one organization's day, counted per distinct combination (what the rollup reads). */
export interface FactCount {
  userId: string;
  kind: string;
  client: string | null;
  level: string | null;
  name: string | null;
  detail: string | null;
  command: string | null;
  n: number;
}

/** One user's token usage of the day with one model, as Sessions' TokenUsageReader gives it. */
export type ModelUsage = DailyTokenUsage;

/** A user's row of the users endpoint, without `user_id`, `user_email` and `date`. */
export type UserDayMetrics = Omit<ApiSchema<'AnalyticsUserRow'>, 'user_id' | 'user_email' | 'date'>;

export interface UserDay {
  userId: string;
  /** Sent a user message that day: counts in the active users. */
  active: boolean;
  clients: ClientType[];
  metrics: UserDayMetrics;
}

/** A day of the tools endpoint, as stored: its row without `date`. */
export type ToolsDay = Omit<ApiSchema<'AnalyticsToolsRow'>, 'date'>;

/** What a day adds to the activity endpoint's row (the active users are counted over the range). */
export type ActivityDay = Pick<ApiSchema<'AnalyticsActivityRow'>, 'sessions' | 'messages' | 'user_messages'>;

/** A day of the productivity endpoint, as stored: its row without `date`. */
export type ProductivityDay = Omit<ApiSchema<'AnalyticsProductivityRow'>, 'date'>;

export interface DayRollup {
  users: UserDay[];
  tools: ToolsDay;
  activity: ActivityDay;
  productivity: ProductivityDay;
}

/** Ratios and averages are served with two decimals, halves up (1.005 is 1.01, which `value * 100` would miss). */
export function round2(value: number): number {
  const shifted = String(value).includes('e') ? value * 100 : Number(`${value}e2`);
  return Math.round(shifted) / 100;
}

/**
 * Each count's share of the total with two decimals, summing to exactly 1 (all 0 when the total is):
 * largest-remainder rounding, as rounding each share alone can sum to 0.99 or 1.01. Ties in the
 * remainder go to the larger count, then to the earlier one.
 */
export function shares2(counts: number[]): number[] {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total <= 0) return counts.map(() => 0);
  // In hundredths, exactly: count * 100 / total as a whole part and a remainder over total.
  const whole = counts.map((count) => Math.floor((count * 100) / total));
  const remainder = counts.map((count, i) => count * 100 - whole[i] * total);
  let left = 100 - whole.reduce((a, b) => a + b, 0);
  const order = counts.map((_, i) => i).sort((a, b) => remainder[b] - remainder[a] || counts[b] - counts[a] || a - b);
  for (const i of order) {
    if (left <= 0) break;
    whole[i] += 1;
    left -= 1;
  }
  return whole.map((hundredths) => hundredths / 100);
}

/** Nearest-rank percentile of sorted values (0 when there are none). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

class Counter<K> extends Map<K, number> {
  add(key: K, n: number): void {
    this.set(key, (this.get(key) ?? 0) + n);
  }

  /** Largest first, ties by key. */
  sorted(): Array<[K, number]> {
    return [...this.entries()].sort((a, b) => b[1] - a[1] || (String(a[0]) < String(b[0]) ? -1 : String(a[0]) > String(b[0]) ? 1 : 0));
  }
}

interface UserTally {
  counts: Counter<string>;
  clients: Set<ClientType>;
  delegation: Counter<DelegationLevel>;
  autonomy: Counter<AutonomyLevel>;
  languages: Counter<string>;
  assistantModels: Counter<string>;
  tokens: Counter<string>;
  thinkingModels: Set<string>;
  billable: number;
}

const tally = (): UserTally => ({
  counts: new Counter(),
  clients: new Set(),
  delegation: new Counter(),
  autonomy: new Counter(),
  languages: new Counter(),
  assistantModels: new Counter(),
  tokens: new Counter(),
  thinkingModels: new Set(),
  billable: 0,
});

/**
 * Folds one organization's day of facts and token usage into the rows the endpoints serve. Pure and
 * deterministic: the same facts give the same rollup, so rolling up again changes nothing.
 */
export function rollUpDay(facts: FactCount[], usage: ModelUsage[], sessionsWithMessages: number): DayRollup {
  const users = new Map<string, UserTally>();
  const user = (id: string) => users.get(id) ?? users.set(id, tally()).get(id)!;
  const tools = new Counter<string>();
  const servers = new Counter<string>();
  const skills = new Counter<string>();
  const commands = new Counter<string>();
  const hooks = new Counter<string>();
  const extensions = new Counter<string>();
  const languages = new Counter<string>();
  const autonomy = new Counter<AutonomyLevel>();
  const mcpUsers = new Set<string>();

  for (const fact of facts) {
    const u = user(fact.userId);
    u.counts.add(fact.kind, fact.n);
    switch (fact.kind) {
      case FactKind.UserMessage:
        if (fact.client) u.clients.add(fact.client as ClientType);
        if (fact.level) u.delegation.add(fact.level as DelegationLevel, fact.n);
        break;
      case FactKind.AssistantMessage:
        if (fact.name) u.assistantModels.add(fact.name, fact.n);
        break;
      case FactKind.ToolCall:
        tools.add(fact.name ?? 'unknown', fact.n);
        if (fact.level) {
          autonomy.add(fact.level as AutonomyLevel, fact.n);
          u.autonomy.add(fact.level as AutonomyLevel, fact.n);
        }
        if (fact.detail) {
          servers.add(fact.detail, fact.n);
          u.counts.add('mcp', fact.n);
          mcpUsers.add(fact.userId);
        }
        break;
      case FactKind.Skill:
        skills.add(fact.name ?? '', fact.n);
        break;
      case FactKind.SlashCommand:
        commands.add(fact.name ?? '', fact.n);
        break;
      case FactKind.Hook:
        hooks.add(JSON.stringify([fact.name ?? '', fact.detail ?? '', fact.command ?? '']), fact.n);
        break;
      case FactKind.FileCreated:
      case FactKind.FileEdited:
        extensions.add(fact.name ?? '(none)', fact.n);
        languages.add(fact.detail ?? 'Other', fact.n);
        u.languages.add(fact.detail ?? 'Other', fact.n);
        break;
    }
  }
  for (const row of usage) {
    const u = user(row.userId);
    const billable = billableTokens({ input: row.input, output: row.output + row.thinking, cacheWrite: row.cacheWrite, cacheRead: row.cacheRead });
    u.billable += billable;
    u.tokens.add(row.model, billable);
    if (row.thinking > 0) u.thinkingModels.add(row.model);
  }

  const userDays: UserDay[] = [...users.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([userId, u]) => ({ userId, active: (u.counts.get(FactKind.UserMessage) ?? 0) > 0, clients: [...u.clients].sort(), metrics: userMetrics(u) }));
  const total = (kind: FactKind) => userDays.reduce((sum, day) => sum + countOf(day.metrics, kind), 0);
  const ratios = userDays
    .filter((day) => day.metrics.user_messages > 0)
    .map((day) => day.metrics.tool_calls / day.metrics.user_messages)
    .sort((a, b) => a - b);
  const toolCalls = total(FactKind.ToolCall);
  const userTurns = total(FactKind.UserMessage);

  return {
    users: userDays,
    tools: {
      tool_calls: toolCalls,
      by_tool: tools.sorted().map(([tool, invocations]) => ({ tool, invocations })),
      mcp_users_with_mcp: mcpUsers.size,
      mcp_by_server: servers.sorted().map(([server, invocations]) => ({ server, invocations })),
      skills_invocations: total(FactKind.Skill),
      skills_by_name: skills.sorted().map(([name, count]) => ({ name, count })),
      slash_commands_invocations: total(FactKind.SlashCommand),
      slash_commands_by_name: commands.sorted().map(([name, count]) => ({ name, count })),
      hooks_invocations: total(FactKind.Hook),
      hooks_by_event: hooks.sorted().map(([key, count]) => {
        const [event, matcher, command] = JSON.parse(key) as [string, string, string];
        return { event, matcher, command, count };
      }),
      web_users: userDays.filter((day) => day.clients.includes('web')).length,
      autonomy_ratio_avg: ratios.length === 0 ? 0 : round2(ratios.reduce((a, b) => a + b, 0) / ratios.length),
      autonomy_ratio_p50: round2(percentile(ratios, 50)),
      autonomy_ratio_p90: round2(percentile(ratios, 90)),
      tool_calls_per_session_avg: sessionsWithMessages === 0 ? 0 : round2(toolCalls / sessionsWithMessages),
      user_turns_per_session_avg: sessionsWithMessages === 0 ? 0 : round2(userTurns / sessionsWithMessages),
      tool_autonomy_level_ratio: Object.fromEntries(
        shares2(AUTONOMY_LEVELS.map((level) => autonomy.get(level) ?? 0)).map((share, i) => [AUTONOMY_LEVELS[i], share]),
      ) as Record<AutonomyLevel, number>,
    },
    activity: {
      sessions: total(FactKind.SessionStarted),
      messages: userTurns + total(FactKind.AssistantMessage),
      user_messages: userTurns,
    },
    productivity: {
      files_created: total(FactKind.FileCreated),
      files_edited: total(FactKind.FileEdited),
      by_extension: extensions.sorted().map(([extension, count]) => ({ extension, count })),
      by_language: languages.sorted().map(([language, count]) => ({ language, count })),
      git_commits: total(FactKind.GitCommit),
      git_prs_created: total(FactKind.GitPullRequest),
    },
  };
}

function countOf(metrics: UserDayMetrics, kind: FactKind): number {
  switch (kind) {
    case FactKind.ToolCall:
      return metrics.tool_calls;
    case FactKind.UserMessage:
      return metrics.user_messages;
    case FactKind.AssistantMessage:
      return metrics.assistant_messages;
    case FactKind.SessionStarted:
      return metrics.sessions;
    case FactKind.Skill:
      return metrics.skill_calls;
    case FactKind.SlashCommand:
      return metrics.slash_commands;
    case FactKind.Hook:
      return metrics.hooks;
    case FactKind.FileCreated:
      return metrics.files_created;
    case FactKind.FileEdited:
      return metrics.files_edited;
    case FactKind.GitCommit:
      return metrics.git_commits;
    case FactKind.GitPullRequest:
      return metrics.git_prs_created;
    default:
      return 0;
  }
}

function userMetrics(u: UserTally): UserDayMetrics {
  const n = (kind: string) => u.counts.get(kind) ?? 0;
  const userMessages = n(FactKind.UserMessage);
  const assistantMessages = n(FactKind.AssistantMessage);
  const toolCalls = n(FactKind.ToolCall);
  // The model with the most billable tokens; without usage, the one that wrote most assistant messages.
  const primary = u.tokens.sorted()[0]?.[0] ?? u.assistantModels.sorted()[0]?.[0] ?? 'unknown';
  return {
    tool_calls: toolCalls,
    billable_tokens: u.billable,
    primary_model: primary,
    primary_model_tier: u.thinkingModels.has(primary) ? 'thinking' : 'standard',
    files_created: n(FactKind.FileCreated),
    files_edited: n(FactKind.FileEdited),
    git_commits: n(FactKind.GitCommit),
    git_prs_created: n(FactKind.GitPullRequest),
    mcp_calls: n('mcp'),
    skill_calls: n(FactKind.Skill),
    slash_commands: n(FactKind.SlashCommand),
    hooks: n(FactKind.Hook),
    sessions: n(FactKind.SessionStarted),
    messages: userMessages + assistantMessages,
    user_messages: userMessages,
    assistant_messages: assistantMessages,
    autonomy_ratio: userMessages === 0 ? 0 : round2(toolCalls / userMessages),
    delegation_level: delegationOf(u),
    languages: u.languages.sorted().map(([language]) => language),
  };
}

/**
 * The level most of the user's turns ran at that day (ties: the more autonomous); without turns,
 * the level most tool calls ran at; with neither, `manual`.
 */
function delegationOf(u: UserTally): DelegationLevel {
  const byTurns = DELEGATION_LEVELS.reduce<DelegationLevel | null>(
    (best, level) => ((u.delegation.get(level) ?? 0) > (best ? u.delegation.get(best)! : 0) ? level : best),
    null,
  );
  if (byTurns) return byTurns;
  const byCalls = AUTONOMY_LEVELS.reduce<AutonomyLevel | null>(
    (best, level) => ((u.autonomy.get(level) ?? 0) > (best ? u.autonomy.get(best)! : 0) ? level : best),
    null,
  );
  return byCalls ? (byCalls.replace('_', '-') as DelegationLevel) : 'manual';
}

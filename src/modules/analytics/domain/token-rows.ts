import type { ApiSchema } from '../../../platform/http/api-schema';
import { billableTokens, ModelTier } from './billing';
import type { ModelUsage } from './day-rollup';

/** The tokens endpoint's rows, as its published schemas describe them. */
export type TokensRow = ApiSchema<'AnalyticsTokensRow'>;
export type TokensByModelRow = ApiSchema<'AnalyticsTokensByModelRow'>;
export type ModelBreakdown = TokensRow['by_model'][number];

/** A user's usage of the day with one model, with the user's email. */
export interface UserModelUsage extends ModelUsage {
  userEmail: string | null;
}

interface Totals {
  billable: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  thinking: number;
}

const zero = (): Totals => ({ billable: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, thinking: 0 });

/** Adds one fact row: output tokens include thinking tokens (they are billed as output). */
function add(totals: Totals, row: ModelUsage): void {
  totals.billable += billableTokens({ input: row.input, output: row.output + row.thinking, cacheWrite: row.cacheWrite, cacheRead: row.cacheRead });
  totals.input += row.input;
  totals.output += row.output + row.thinking;
  totals.cacheRead += row.cacheRead;
  totals.cacheWrite += row.cacheWrite;
  totals.thinking += row.thinking;
}

function breakdown(byModel: Map<string, Totals>): ModelBreakdown[] {
  return [...byModel.entries()]
    .map(([model, t]) => ({
      model_id: model,
      model_tier: (t.thinking > 0 ? 'thinking' : 'standard') as ModelTier,
      billable_tokens: t.billable,
      input_tokens: t.input,
      output_tokens: t.output,
    }))
    .sort((a, b) => b.billable_tokens - a.billable_tokens || (a.model_id < b.model_id ? -1 : 1));
}

/** The day's row: totals, then models and users by billable tokens, largest first (zeros and no entries on a quiet day). */
export function tokensDay(day: string, usage: UserModelUsage[]): TokensRow {
  const total = zero();
  const models = new Map<string, Totals>();
  const users = new Map<string, { email: string | null; total: Totals; models: Map<string, Totals> }>();
  for (const row of usage) {
    add(total, row);
    if (!models.has(row.model)) models.set(row.model, zero());
    add(models.get(row.model)!, row);
    if (!users.has(row.userId)) users.set(row.userId, { email: row.userEmail, total: zero(), models: new Map() });
    const user = users.get(row.userId)!;
    add(user.total, row);
    if (!user.models.has(row.model)) user.models.set(row.model, zero());
    add(user.models.get(row.model)!, row);
  }
  return {
    date: day,
    billable_tokens: total.billable,
    input_tokens: total.input,
    output_tokens: total.output,
    cache_read_tokens: total.cacheRead,
    cache_write_tokens: total.cacheWrite,
    by_model: breakdown(models),
    by_user: [...users.entries()]
      .map(([id, user]) => ({ user_id: id, user_email: user.email, billable_tokens: user.total.billable, by_model: breakdown(user.models) }))
      .sort((a, b) => b.billable_tokens - a.billable_tokens || (a.user_id < b.user_id ? -1 : 1)),
  };
}

/** `group_by=model`: the `by_model` arrays flattened into rows, days in order, models by billable tokens. */
export function tokensByModel(rows: TokensRow[]): TokensByModelRow[] {
  return rows.flatMap((row) =>
    row.by_model.map((model) => ({
      date: row.date,
      group_key: model.model_id,
      billable_tokens: model.billable_tokens,
      input_tokens: model.input_tokens,
      output_tokens: model.output_tokens,
    })),
  );
}

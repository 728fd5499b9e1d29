/**
 * Billable tokens (documented in /docs § Analytics): input and output tokens count in full
 * (thinking tokens are output), cache writes at 125%, cache reads at 10% — the discount of reading
 * a cached prompt. Computed in integers per day, user and model, so every total is the exact sum
 * of its parts.
 */
export function billableTokens(usage: { input: number; output: number; cacheWrite: number; cacheRead: number }): number {
  return usage.input + usage.output + Math.floor((125 * usage.cacheWrite + 10 * usage.cacheRead) / 100);
}

/** `thinking` when the model spent thinking tokens that day, else `standard`. */
export type ModelTier = 'standard' | 'thinking';

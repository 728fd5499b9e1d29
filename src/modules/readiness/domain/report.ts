/** The spec's `modelUsed.reasoningEffort` values. */
export const REASONING_EFFORTS = ['low', 'medium', 'high', 'off'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

/** What one uploaded report may hold (our decision; the spec shows none). */
export const REPORT_LIMITS = {
  repoUrl: 2048,
  apps: 500,
  appPath: 1024,
  description: 2000,
  criteria: 200,
  rationale: 8192,
} as const;

/** Reports listed per page at most, whatever positive `limit` asks for. */
export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 20;

/** Points of a repository's level history answered at most (its newest reports), and by default. */
export const MAX_HISTORY = 500;
export const DEFAULT_HISTORY = 100;

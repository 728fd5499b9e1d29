import type { ApiSchema } from '../../../platform/http/api-schema';

/**
 * Value sets the spec leaves out ("not shown"), decided here and published in OpenAPI.
 * The spec fixes one value of each (`none`, `auto`, `off`, `normal`); the rest are ours.
 */
export const REASONING_EFFORTS = ['none', 'dynamic', 'off', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export const INTERACTION_MODES = ['auto', 'spec', 'ask'] as const;
export const AUTONOMY_LEVELS = ['off', 'low', 'medium', 'high'] as const;
export const AUTONOMY_MODES = ['normal', 'unattended'] as const;
/**
 * Model providers a session can be locked to: the spec's five, and `anthropic` (ours: the reference agent's own
 * model on the Messages API). The organization's custom models are `custom`.
 */
export const PROVIDER_LOCKS = ['vendor-a', 'vendor-b', 'vendor-c', 'generic-chat-completion-api', 'custom', 'anthropic'] as const;
/** API flavours a session can be locked to. */
export const API_PROVIDER_LOCKS = ['messages', 'responses', 'chat-completions'] as const;

/** Which sessions a list answers by archive state (`archivedAt` set): `exclude`, the default, leaves archived ones out. */
export const ARCHIVED_FILTERS = ['exclude', 'include', 'only'] as const;
export type ArchivedFilter = (typeof ARCHIVED_FILTERS)[number];

/** Whether a session is archived: its `archivedAt` is set (archiving and unarchiving are PATCHes of that setting). */
export function isArchived(settings: StoredSessionSettings): boolean {
  return typeof settings.archivedAt === 'string';
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheCreationTokens: number;
  cacheReadTokens: number;
  thinkingTokens: number;
}

export const TOKEN_USAGE_FIELDS = ['inputTokens', 'outputTokens', 'cacheCreationTokens', 'cacheReadTokens', 'thinkingTokens'] as const;

/** `sessionSettings` as stored and returned; every field is optional (spec: required fields not shown). */
export type StoredSessionSettings = ApiSchema<'SessionSettings'>;

/** Fields the server keeps up to date from agent reports; clients cannot set them. */
export const SERVER_MAINTAINED_SETTINGS = ['assistantActiveTimeMs', 'tokenUsage'] as const;

/**
 * The session settings this server accepts and stores but does not act on yet, each with the reason
 * (docs/controls.md lists every setting): the schemas mark them, and answers that set one warn.
 */
export const NO_EFFECT_SESSION_SETTINGS: Readonly<Record<string, string>> = {};

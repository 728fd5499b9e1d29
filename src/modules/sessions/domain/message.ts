export enum MessageRole {
  User = 'user',
  Assistant = 'assistant',
  Tool = 'tool',
  System = 'system',
}

export const MESSAGE_ROLES = Object.values(MessageRole);
/** Roles agents write through the agent channel; user messages come only from add-message. */
export const AGENT_MESSAGE_ROLES = [MessageRole.Assistant, MessageRole.Tool, MessageRole.System] as const;

export const USER_MESSAGE_SOURCES = [
  'web',
  'desktop',
  'cli_tui',
  'cli_exec',
  'cli_acp',
  'sessions_api',
  'api',
  'automation',
  'readiness-remediation',
  'readiness-evaluation',
  'wiki-generation',
  'wiki-ci-setup',
  // The spec names four third-party integrations without naming them; ours are generic.
  'chat_integration_a',
  'chat_integration_b',
  'issue_tracker_a',
  'issue_tracker_b',
] as const;

export const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

/** A content block as stored: exactly the fields the spec lists for its type. */
export type ContentBlock = { type: string; [field: string]: unknown };

/** The spec's optional Message fields other than parentId and userMessageSource. */
export type MessageAttributes = Record<string, unknown>;

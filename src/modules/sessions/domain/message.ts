import type { ApiSchema } from '../../../platform/http/api-schema';
/** A union of strings, not an enum: the agent channel's generated request types carry these literals. */
export const MessageRole = { User: 'user', Assistant: 'assistant', Tool: 'tool', System: 'system' } as const;
export type MessageRole = (typeof MessageRole)[keyof typeof MessageRole];

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

export type UserMessageSource = (typeof USER_MESSAGE_SOURCES)[number];

export const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

/** A content block as stored: exactly the fields the spec lists for its type. */
export type ContentBlock = ApiSchema<'ContentBlock'>;

/** The spec's optional Message fields other than parentId and userMessageSource. */
export type MessageAttributes = Record<string, unknown>;

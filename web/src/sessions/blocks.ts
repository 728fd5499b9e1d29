/**
 * The spec's content blocks as they come over the wire (`type` is `text`, `image`...). The generated types name the
 * variants by schema instead, so the console reads messages through these.
 */
export type ImageSource = { type: 'base64'; mediaType: string; data: string };
export type DocumentSource =
  | { type: 'base64'; mediaType: 'application/pdf'; data: string; parsedData?: string; name?: string; path?: string }
  | { type: 'text'; mediaType: 'text/plain'; data: string; name?: string; mime?: string };

export type Block =
  | { type: 'text'; text: string; id?: string }
  | { type: 'image'; source: ImageSource; id?: string }
  | { type: 'thinking'; thinking: string; signature: string; durationMs?: number; id?: string }
  | { type: 'redacted_thinking'; data: string; id?: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; toolUseId: string; isError?: boolean; content?: string | Block[]; id?: string }
  | { type: 'document'; source: DocumentSource; id?: string };

export interface WireMessage {
  id: string;
  role: 'user' | 'assistant' | 'tool' | 'system';
  content: Block[];
  createdAt: number;
  updatedAt: number;
  userMessageSource?: string;
  modelId?: string;
  isError?: boolean;
  hookEventName?: string;
  hookMatcher?: string;
  hookCommands?: { command: string; timeout?: number }[];
  hookStatus?: 'executing' | 'completed' | 'error';
  hookResults?: { exitCode: number; stdout: string; stderr: string; suppressOutput?: boolean }[];
  hookToolCallId?: string;
  hiddenFromUserViews?: boolean;
}

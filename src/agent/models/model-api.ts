import type { RequestAuth } from './model-http';
/**
 * What the agent needs of a model, whatever API serves it: the conversation in Chat Completions shape
 * (the agent's own), the tools, and one whole answer back, with the text passed on as it arrives.
 */

/** A message of the agent's conversation, in the shape of OpenAI-compatible Chat Completions. */
export type ChatMessage =
  | { role: 'system'; content: string }
  /**
   * `images`: attached to the user's message, after its text (base64, as the session stored them). `documents`: its PDFs,
   * which a Messages API model reads itself; any other model gets their text instead (readingDocuments in agent.ts).
   */
  | { role: 'user'; content: string; images?: ChatImage[]; documents?: ChatDocument[] }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: ToolCall[];
      /** Anthropic thinking blocks of this answer, sent back as they came (signature included), as Anthropic requires across tool use. */
      thinking?: ThinkingBlock[];
    }
  /**
   * `isError`: the call failed or was refused (Anthropic's `is_error`; Chat Completions has no such field). `images`: what the tool
   * showed (an image file it read): in the result for Anthropic, in a user message after the results for Chat Completions.
   */
  | { role: 'tool'; tool_call_id: string; content: string; isError?: boolean; images?: ChatImage[] };

/** A PDF of a user message: its bytes (base64), its name, and the text the client extracted from it, if any. */
export interface ChatDocument {
  mediaType: 'application/pdf';
  data: string;
  name?: string;
  parsedText?: string;
}

/** An image of a user message: its media type and its bytes, base64. */
export interface ChatImage {
  mediaType: string;
  data: string;
}

export interface ThinkingBlock {
  thinking: string;
  signature: string;
  /** The data of a `redacted_thinking` block (thinking and signature then empty): sent back as it came, too. */
  redacted?: string;
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ToolSpec {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** Tokens of one model call, as the agent channel's usage report counts them. */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
  thinkingTokens: number;
}

/** One answer of the model, with what the agent channel records of it. */
export interface ModelAnswer {
  text: string;
  toolCalls: ToolCall[];
  /** Chat Completions reasoning text, and the field it came in (`reasoning` or `reasoning_content`). */
  reasoning?: { field: 'reasoning' | 'reasoning_content'; content: string };
  /** Anthropic thinking blocks, with their signatures. */
  thinking?: ThinkingBlock[];
  usage: ModelUsage;
  finishReason: string | null;
}

/** The model APIs the agent speaks; the values are those of a custom model's `provider`. */
export type ModelProvider = 'generic-chat-completion-api' | 'anthropic';
export const MODEL_PROVIDERS: readonly ModelProvider[] = ['generic-chat-completion-api', 'anthropic'];

export interface ModelConfig {
  /**
   * Chat Completions: e.g. https://api.example.com/v1 (the client appends /chat/completions). Anthropic Messages:
   * https://api.anthropic.com (no path: the client appends /v1/messages) or an address with a path (it appends /messages).
   */
  baseUrl: string;
  /** The model as the platform knows it (the session records it); the vendor's name for it is `vendorModel`, when another. */
  model: string;
  vendorModel?: string;
  apiKey?: string;
  extraHeaders?: Record<string, string>;
  extraArgs?: Record<string, unknown>;
  maxOutputTokens?: number;
  /** Extended thinking with this budget of tokens (Anthropic Messages only). */
  thinkingBudgetTokens?: number;
  /** Credentials of the computer's own, made into headers for each request (a custom model's cloudModelConfig). */
  auth?: RequestAuth;
}

/** A retry about to be made, for the agent's log. */
export interface RetryNotice {
  /** The attempt that failed (1 for the first call). */
  attempt: number;
  delayMs: number;
  error: ModelError;
}

export interface CompleteOptions {
  /** The turn's: once aborted, the call ends and is not retried. */
  signal?: AbortSignal;
  /** Each piece of the answer's text as it arrives; the returned answer is whole. */
  onText?: (delta: string) => void;
  /** Each piece of the model's thinking (Anthropic `thinking_delta`, Chat Completions `reasoning`/`reasoning_content`) as it arrives. */
  onThinking?: (delta: string) => void;
  /** Each piece of a tool call's arguments (JSON text) as the model writes them, with the call's id and tool name. */
  onToolInput?: (call: { id: string; name: string }, delta: string) => void;
  onRetry?: (notice: RetryNotice) => void;
  /** The session's `reasoningEffort` (or `specModeReasoningEffort`): how hard the model should think, where its API has a say. */
  reasoningEffort?: string;
}

/**
 * Chat Completions' `reasoning_effort` for a session's effort: the four values the API knows, the two
 * above it as `high`. `none`, `off` and `dynamic` send nothing (the model's own default): there is no
 * value every vendor accepts for "no reasoning", and an unknown one fails the call.
 */
export function reasoningEffortParameter(effort: string | undefined): string | undefined {
  if (effort === 'minimal' || effort === 'low' || effort === 'medium' || effort === 'high') return effort;
  return effort === 'xhigh' || effort === 'max' ? 'high' : undefined;
}

/** Anthropic thinking budgets (tokens) by effort, for a model with thinking on. */
const THINKING_BUDGETS: Record<string, number> = { minimal: 1_024, low: 2_048, medium: 8_192, high: 16_384, xhigh: 32_768, max: 65_536 };

/**
 * The thinking budget of one Anthropic call: none for `none`/`off`; the effort's budget for a model
 * with thinking on (`budget`, from `enableThinking`); the model's own budget otherwise. A model
 * without thinking on is never asked to think: not every Anthropic model can.
 */
export function thinkingBudgetFor(budget: number | undefined, effort: string | undefined): number | undefined {
  if (budget === undefined || effort === 'none' || effort === 'off') return undefined;
  return (effort !== undefined && THINKING_BUDGETS[effort]) || budget;
}

/** A model behind one API: `complete` sends the conversation and tools and returns the whole answer. */
export interface ModelApi {
  readonly provider: ModelProvider;
  readonly config: ModelConfig;
  complete(messages: ChatMessage[], tools: ToolSpec[], options?: CompleteOptions): Promise<ModelAnswer>;
}

/** A model's answer that was not one: an HTTP error, a network error, a malformed body or stream. */
export class ModelError extends Error {
  /** The HTTP status of the (last) answer, when there was one. */
  readonly status?: number;
  /** Whether trying again may help (429, 5xx, the network) and nothing of the answer was passed on yet. */
  readonly retryable: boolean;
  /** What the vendor's `Retry-After` asked for, in milliseconds. */
  readonly retryAfterMs?: number;
  /** Calls made before giving up (1 when it was not retried). */
  readonly attempts: number;

  constructor(message: string, details: { status?: number; retryable?: boolean; retryAfterMs?: number; attempts?: number } = {}) {
    super(message);
    this.status = details.status;
    this.retryable = details.retryable ?? false;
    this.retryAfterMs = details.retryAfterMs;
    this.attempts = details.attempts ?? 1;
  }
}

/** Statuses worth another try: rate limits, server errors and Anthropic's 529 (overloaded). */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504, 529]);

/** `url` with `suffix` appended to its path, its query kept after it. */
export function endpoint(baseUrl: string, suffix: string): string {
  const url = new URL(baseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${suffix}`;
  url.hash = '';
  return url.href;
}

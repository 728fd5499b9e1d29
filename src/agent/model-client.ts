/** A message of an OpenAI-compatible Chat Completions conversation. */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ToolSpec {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** One answer of the model, with what the agent channel records of it. */
export interface ModelAnswer {
  text: string;
  toolCalls: ToolCall[];
  /** Reasoning text, and the field it came in (`reasoning` or `reasoning_content`). */
  reasoning?: { field: 'reasoning' | 'reasoning_content'; content: string };
  usage: { inputTokens: number; outputTokens: number; cacheReadTokens: number; thinkingTokens: number };
  finishReason: string | null;
}

export interface ModelConfig {
  /** e.g. https://api.example.com/v1 (the client appends /chat/completions). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  extraHeaders?: Record<string, string>;
  extraArgs?: Record<string, unknown>;
  maxOutputTokens?: number;
}

/** A model's answer that was not one: an HTTP error or a malformed body. */
export class ModelError extends Error {}

/** An OpenAI-compatible Chat Completions client with tool calling (non-streaming). */
export class ModelClient {
  constructor(readonly config: ModelConfig) {}

  async complete(messages: ChatMessage[], tools: ToolSpec[], signal?: AbortSignal): Promise<ModelAnswer> {
    const { baseUrl, model, apiKey, extraHeaders, extraArgs, maxOutputTokens } = this.config;
    const res = await fetch(`${baseUrl.replace(/\/+$/, '')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}), ...extraHeaders },
      body: JSON.stringify({ ...extraArgs, model, messages, ...(tools.length ? { tools } : {}), ...(maxOutputTokens ? { max_tokens: maxOutputTokens } : {}) }),
      signal: signal ?? AbortSignal.timeout(600_000),
    }).catch((error: Error) => {
      throw new ModelError(`the model at ${baseUrl} could not be reached: ${(error.cause as Error | undefined)?.message ?? error.message}`);
    });
    const text = await res.text();
    if (!res.ok) throw new ModelError(`the model at ${baseUrl} answered ${res.status}: ${text.slice(0, 500)}`);
    let body: ChatCompletion;
    try {
      body = JSON.parse(text) as ChatCompletion;
    } catch {
      throw new ModelError(`the model at ${baseUrl} answered something that is not JSON: ${text.slice(0, 200)}`);
    }
    const choice = body.choices?.[0];
    if (!choice?.message) throw new ModelError(`the model at ${baseUrl} answered without a choice`);
    const { message } = choice;
    const reasoningField =
      typeof message.reasoning_content === 'string' ? 'reasoning_content' : typeof message.reasoning === 'string' ? 'reasoning' : undefined;
    const usage = body.usage ?? {};
    const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
    const reasoningTokens = usage.completion_tokens_details?.reasoning_tokens ?? 0;
    return {
      text: typeof message.content === 'string' ? message.content : '',
      toolCalls: (message.tool_calls ?? []).filter((call) => call?.type === 'function' && typeof call.function?.name === 'string'),
      ...(reasoningField && message[reasoningField] ? { reasoning: { field: reasoningField, content: message[reasoningField]! } } : {}),
      usage: {
        inputTokens: Math.max(0, (usage.prompt_tokens ?? 0) - cached),
        cacheReadTokens: cached,
        outputTokens: Math.max(0, (usage.completion_tokens ?? 0) - reasoningTokens),
        thinkingTokens: reasoningTokens,
      },
      finishReason: choice.finish_reason ?? null,
    };
  }
}

interface ChatCompletion {
  choices?: Array<{
    finish_reason?: string | null;
    message?: { content?: string | null; tool_calls?: ToolCall[]; reasoning?: string; reasoning_content?: string };
  }>;
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number };
    completion_tokens_details?: { reasoning_tokens?: number };
  };
}

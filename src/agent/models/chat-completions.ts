import {
  ChatImage,
  ChatMessage,
  CompleteOptions,
  endpoint,
  ModelAnswer,
  ModelApi,
  ModelConfig,
  ModelError,
  ModelUsage,
  reasoningEffortParameter,
  ToolCall,
  ToolSpec,
} from './model-api';
import { eventJson, isEventStream, jsonBody, postModel, readEvents } from './model-http';
import { DEFAULT_RETRY, RetryPolicy, withRetries } from './retry';

/** An OpenAI-compatible Chat Completions client with tool calling, streamed. */
export class ChatCompletionsClient implements ModelApi {
  readonly provider = 'generic-chat-completion-api';
  private readonly retry: RetryPolicy;
  /** Whether to ask for usage in the stream (`stream_options`); off once the vendor refused the field. */
  private streamOptions = true;

  constructor(
    readonly config: ModelConfig,
    options: { retry?: Partial<RetryPolicy> } = {},
  ) {
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
  }

  complete(messages: ChatMessage[], tools: ToolSpec[], options: CompleteOptions = {}): Promise<ModelAnswer> {
    const { model, vendorModel, apiKey, extraHeaders, extraArgs, maxOutputTokens } = this.config;
    // Thinking blocks are Anthropic's; a Chat Completions API does not know the field.
    const conversation = withToolImages(messages).map((message) =>
      message.role === 'assistant' && message.thinking
        ? withoutThinking(message)
        : message.role === 'tool'
          ? { role: message.role, tool_call_id: message.tool_call_id, content: message.content }
          : message.role === 'user'
            ? withImages(message)
            : message,
    );
    const effort = reasoningEffortParameter(options.reasoningEffort);
    const body = {
      ...extraArgs,
      model: vendorModel ?? model,
      messages: conversation,
      ...(tools.length ? { tools } : {}),
      ...(maxOutputTokens ? { max_tokens: maxOutputTokens } : {}),
      ...(effort ? { reasoning_effort: effort } : {}),
      stream: true,
      ...(this.streamOptions ? { stream_options: { include_usage: true } } : {}),
    };
    const headers = { ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}), ...extraHeaders };
    const url = endpoint(this.config.baseUrl, '/chat/completions');
    return withRetries(
      async () => {
        let res;
        try {
          res = await postModel(url, headers, body, options.signal, this.config.auth);
        } catch (error) {
          // A vendor that does not know stream_options (it rejects the field with a 400 or 422 naming it): asked again without it,
          // from now on. Its answers then carry no usage, or give it in their last chunk all the same.
          if (!this.streamOptions || !refusesStreamOptions(error)) throw error;
          this.streamOptions = false;
          const plain: Record<string, unknown> = { ...body };
          delete plain.stream_options;
          res = await postModel(url, headers, plain, options.signal, this.config.auth);
        }
        return isEventStream(res) ? streamed(res, options) : whole(await jsonBody<ChatCompletion>(res), res);
      },
      this.retry,
      options,
    );
  }
}

/** Whether a model error is a vendor refusing the `stream_options` field. */
function refusesStreamOptions(error: unknown): boolean {
  return error instanceof ModelError && (error.status === 400 || error.status === 422) && /stream_options/i.test(error.message);
}

function withoutThinking(message: Extract<ChatMessage, { role: 'assistant' }>): ChatMessage {
  return { role: 'assistant', content: message.content, ...(message.tool_calls ? { tool_calls: message.tool_calls } : {}) };
}

function whole(body: ChatCompletion, res: Response): ModelAnswer {
  const choice = body.choices?.[0];
  if (!choice?.message) throw new ModelError(`the model at ${new URL(res.url).origin} answered without a choice`);
  const { message } = choice;
  const field = typeof message.reasoning_content === 'string' ? 'reasoning_content' : typeof message.reasoning === 'string' ? 'reasoning' : undefined;
  return {
    text: typeof message.content === 'string' ? message.content : '',
    toolCalls: (message.tool_calls ?? []).filter((call) => call?.type === 'function' && typeof call.function?.name === 'string'),
    ...(field && message[field] ? { reasoning: { field, content: message[field]! } } : {}),
    usage: usageOf(body.usage),
    finishReason: choice.finish_reason ?? null,
  };
}

/** The answer assembled from its chunks: text and reasoning deltas appended, tool calls by `index`, usage from the last chunk. */
async function streamed(res: Response, options: CompleteOptions): Promise<ModelAnswer> {
  const where = new URL(res.url).origin;
  let text = '';
  let reasoning: ModelAnswer['reasoning'];
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  let usage: ChatCompletion['usage'];
  let finishReason: string | null = null;
  let done = false;
  let started = false;
  await readEvents(
    res,
    (event) => {
      if (done) return;
      if (event.data === '[DONE]') {
        done = true;
        return;
      }
      const chunk = eventJson<ChatCompletionChunk>(event, where);
      if (chunk.error) throw new ModelError(`the model at ${where} streamed an error: ${JSON.stringify(chunk.error).slice(0, 500)}`);
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (!choice) return;
      if (choice.finish_reason) finishReason = choice.finish_reason;
      const delta = choice.delta ?? {};
      for (const field of ['reasoning_content', 'reasoning'] as const) {
        const piece = delta[field];
        if (typeof piece === 'string' && piece) {
          reasoning = { field: reasoning?.field ?? field, content: (reasoning?.content ?? '') + piece };
          started = true;
          options.onThinking?.(piece);
        }
      }
      if (typeof delta.content === 'string' && delta.content) {
        text += delta.content;
        started = true;
        options.onText?.(delta.content);
      }
      for (const part of delta.tool_calls ?? []) {
        const index = typeof part.index === 'number' ? part.index : calls.size === 0 || part.id ? calls.size : calls.size - 1;
        const call = calls.get(index) ?? { id: '', name: '', arguments: '' };
        if (part.id) call.id = part.id;
        // A name comes whole (some vendors repeat it in every chunk); arguments come in pieces.
        if (part.function?.name && !call.name) call.name = part.function.name;
        if (part.function?.arguments) {
          call.arguments += part.function.arguments;
          // The id the answer gives the call (below); a piece that comes before the tool's name is not passed on.
          if (call.name) options.onToolInput?.({ id: call.id || `call_${index}`, name: call.name }, part.function.arguments);
        }
        calls.set(index, call);
        started = true;
      }
    },
    () => started,
    options.signal,
  );
  const toolCalls: ToolCall[] = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .filter(([, call]) => call.name)
    .map(([index, call]) => ({ id: call.id || `call_${index}`, type: 'function', function: { name: call.name, arguments: call.arguments } }));
  return { text, toolCalls, ...(reasoning ? { reasoning } : {}), usage: usageOf(usage), finishReason };
}

/** Input without the cached part (reported as cacheRead), output without the reasoning part (reported as thinking). */
function usageOf(usage: ChatCompletion['usage'] = {}): ModelUsage {
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const reasoningTokens = usage.completion_tokens_details?.reasoning_tokens ?? 0;
  return {
    inputTokens: Math.max(0, (usage.prompt_tokens ?? 0) - cached),
    cacheReadTokens: cached,
    cacheCreationTokens: 0,
    outputTokens: Math.max(0, (usage.completion_tokens ?? 0) - reasoningTokens),
    thinkingTokens: reasoningTokens,
  };
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

interface ChatCompletionChunk {
  choices?: Array<{
    finish_reason?: string | null;
    delta?: {
      content?: string | null;
      reasoning?: string;
      reasoning_content?: string;
      tool_calls?: Array<{ index?: number; id?: string; function?: { name?: string; arguments?: string } }>;
    };
  }>;
  usage?: ChatCompletion['usage'];
  error?: unknown;
}

/** A user message with images as Chat Completions content parts: the text, then each image as a data URL. */
/**
 * A tool message takes no image in Chat Completions: the images of a run of tool results go in a user message right
 * after it (never between them: every call of an answer must be answered first), which says whose they are.
 */
function withToolImages(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  let pending: { ids: string[]; images: ChatImage[] } = { ids: [], images: [] };
  const flush = () => {
    if (pending.images.length) out.push({ role: 'user', content: `The images of the tool results above (${pending.ids.join(', ')}):`, images: pending.images });
    pending = { ids: [], images: [] };
  };
  for (const message of messages) {
    if (message.role !== 'tool') flush();
    out.push(message);
    if (message.role === 'tool' && message.images?.length) {
      pending.ids.push(message.tool_call_id);
      pending.images.push(...message.images);
    }
  }
  flush();
  return out;
}

function withImages(message: Extract<ChatMessage, { role: 'user' }>): { role: 'user'; content: unknown[] | string } {
  if (!message.images?.length) return { role: 'user', content: message.content };
  return {
    role: 'user',
    content: [
      ...(message.content ? [{ type: 'text', text: message.content }] : []),
      ...message.images.map((image) => ({ type: 'image_url', image_url: { url: `data:${image.mediaType};base64,${image.data}` } })),
    ],
  };
}

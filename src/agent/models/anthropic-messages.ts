import {
  ChatImage,
  ChatMessage,
  CompleteOptions,
  ModelAnswer,
  ModelApi,
  ModelConfig,
  ModelError,
  ModelUsage,
  ThinkingBlock,
  thinkingBudgetFor,
  ToolCall,
  ToolSpec,
} from './model-api';
import { eventJson, isEventStream, jsonBody, postModel, readEvents } from './model-http';
import { DEFAULT_RETRY, RetryPolicy, withRetries } from './retry';

export const ANTHROPIC_VERSION = '2023-06-01';
/** `max_tokens` is required by the Messages API: this when the model has no `maxOutputTokens`. */
export const DEFAULT_MAX_TOKENS = 8192;

/**
 * An Anthropic Messages client with tool use and extended thinking, streamed. The agent's conversation
 * (Chat Completions shape) is converted on each call; thinking blocks come back with their signatures
 * and are sent back with the answer they belong to.
 */
export class AnthropicMessagesClient implements ModelApi {
  readonly provider = 'anthropic';
  private readonly retry: RetryPolicy;

  constructor(
    readonly config: ModelConfig,
    options: { retry?: Partial<RetryPolicy> } = {},
  ) {
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
  }

  complete(messages: ChatMessage[], tools: ToolSpec[], options: CompleteOptions = {}): Promise<ModelAnswer> {
    const { model, vendorModel, apiKey, extraHeaders, extraArgs, maxOutputTokens } = this.config;
    const thinkingBudgetTokens = thinkingBudgetFor(this.config.thinkingBudgetTokens, options.reasoningEffort);
    const system = messages.flatMap((m) => (m.role === 'system' ? [m.content] : [])).join('\n\n');
    const configured = maxOutputTokens ?? DEFAULT_MAX_TOKENS;
    const body = {
      ...extraArgs,
      model: vendorModel ?? model,
      // The API refuses a thinking budget that is not below max_tokens: room is made for the answer after it.
      max_tokens: thinkingBudgetTokens !== undefined && configured <= thinkingBudgetTokens ? thinkingBudgetTokens + DEFAULT_MAX_TOKENS : configured,
      // Prompt caching: a breakpoint after the system prompt (tools and system) and one at the end of the conversation,
      // which the next call of the loop extends, so each call pays full price only for what is new since the last.
      ...(system ? { system: [{ type: 'text', text: system, cache_control: EPHEMERAL }] } : {}),
      messages: withCacheBreakpoint(toMessages(messages)),
      ...(tools.length
        ? { tools: tools.map((tool) => ({ name: tool.function.name, description: tool.function.description, input_schema: tool.function.parameters })) }
        : {}),
      ...(thinkingBudgetTokens !== undefined ? { thinking: { type: 'enabled', budget_tokens: thinkingBudgetTokens } } : {}),
      stream: true,
    };
    const headers = { 'anthropic-version': ANTHROPIC_VERSION, ...(apiKey ? { 'x-api-key': apiKey } : {}), ...extraHeaders };
    const url = messagesUrl(this.config.baseUrl);
    return withRetries(
      async () => {
        const res = await postModel(url, headers, body, options.signal, this.config.auth);
        return isEventStream(res) ? streamed(res, options) : whole(await jsonBody<AnthropicMessage>(res));
      },
      this.retry,
      options,
    );
  }
}

/** `{baseUrl}/v1/messages` for an address without a path (`https://api.anthropic.com`), else `{baseUrl}/messages`; a query is kept. */
export function messagesUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  const path = url.pathname.replace(/\/+$/, '');
  url.pathname = `${path}${path === '' ? '/v1' : ''}/messages`;
  url.hash = '';
  return url.href;
}

const EPHEMERAL = { type: 'ephemeral' } as const;

/** The last message's last block marked as a cache breakpoint (text and tool results can be; thinking cannot). */
function withCacheBreakpoint(messages: MessagesMessage[]): MessagesMessage[] {
  const last = messages.at(-1)?.content.at(-1);
  if (last && (last.type === 'text' || last.type === 'tool_result')) last.cache_control = EPHEMERAL;
  return messages;
}

type Block =
  | { type: 'text'; text: string; cache_control?: typeof EPHEMERAL }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } }
  | { type: 'document'; source: { type: 'base64'; media_type: 'application/pdf'; data: string }; title?: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content?: string | Block[]; is_error?: true; cache_control?: typeof EPHEMERAL };

interface MessagesMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

/**
 * The conversation as Messages: system prompts leave it (they are `system`), tool results become
 * `tool_result` blocks of a user message, an answer's thinking blocks come first in its content.
 * Consecutive messages of one role are merged into one, as the API expects roles to alternate.
 */
export function toMessages(messages: ChatMessage[]): MessagesMessage[] {
  const out: MessagesMessage[] = [];
  const add = (role: MessagesMessage['role'], blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const message of messages) {
    if (message.role === 'system') continue;
    if (message.role === 'user')
      add('user', [
        ...(message.content ? [{ type: 'text' as const, text: message.content }] : []),
        ...(message.images ?? []).map(imageBlock),
        ...(message.documents ?? []).map((document): Block => ({
          type: 'document',
          source: { type: 'base64', media_type: 'application/pdf', data: document.data },
          ...(document.name ? { title: document.name } : {}),
        })),
      ]);
    // An empty result goes without content: the API refuses empty text.
    else if (message.role === 'tool')
      add('user', [
        {
          type: 'tool_result',
          tool_use_id: message.tool_call_id,
          ...(message.images?.length
            ? { content: [...(message.content ? [{ type: 'text' as const, text: message.content }] : []), ...message.images.map(imageBlock)] }
            : message.content
              ? { content: message.content }
              : {}),
          ...(message.isError ? { is_error: true as const } : {}),
        },
      ]);
    else if (message.role === 'assistant') {
      add('assistant', [
        ...(message.thinking ?? []).map((block): Block =>
          block.redacted !== undefined
            ? { type: 'redacted_thinking', data: block.redacted }
            : { type: 'thinking', thinking: block.thinking, signature: block.signature },
        ),
        ...(message.content ? [{ type: 'text' as const, text: message.content }] : []),
        ...(message.tool_calls ?? []).map((call): Block => ({ type: 'tool_use', id: call.id, name: call.function.name, input: inputOf(call) })),
      ]);
    }
  }
  return out;
}

function imageBlock(image: ChatImage): Block {
  return { type: 'image', source: { type: 'base64', media_type: image.mediaType, data: image.data } };
}

/** A call's arguments as the object `tool_use.input` must be (`{}` for arguments that are not one). */
function inputOf(call: ToolCall): Record<string, unknown> {
  try {
    const input = JSON.parse(call.function.arguments || '{}') as unknown;
    return typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function whole(body: AnthropicMessage): ModelAnswer {
  if (!Array.isArray(body.content)) throw new ModelError('the model answered a message without content');
  const answer = new Answer();
  answer.usage(body.usage);
  for (const block of body.content) answer.block(block);
  answer.stopReason = body.stop_reason ?? null;
  return answer.done();
}

/** The answer assembled from its events: each content block by `index`, usage from `message_start` then `message_delta`. */
async function streamed(res: Response, options: CompleteOptions): Promise<ModelAnswer> {
  const where = new URL(res.url).origin;
  const answer = new Answer();
  const blocks = new Map<number, StreamedBlock>();
  let started = false;
  await readEvents(
    res,
    (event) => {
      if (event.event === 'ping') return;
      const data = eventJson<StreamEvent>(event, where);
      switch (data.type) {
        case 'message_start':
          answer.usage(data.message?.usage);
          break;
        case 'content_block_start':
          if (data.content_block) blocks.set(data.index ?? blocks.size, { ...data.content_block, json: '' });
          break;
        case 'content_block_delta': {
          const block = blocks.get(data.index ?? blocks.size - 1);
          const delta = data.delta;
          if (!block || !delta) break;
          started = true;
          if (delta.type === 'text_delta' && delta.text) {
            block.text = (block.text ?? '') + delta.text;
            options.onText?.(delta.text);
          } else if (delta.type === 'thinking_delta') {
            block.thinking = (block.thinking ?? '') + (delta.thinking ?? '');
            if (delta.thinking) options.onThinking?.(delta.thinking);
          } else if (delta.type === 'signature_delta') block.signature = (block.signature ?? '') + (delta.signature ?? '');
          else if (delta.type === 'input_json_delta') {
            block.json += delta.partial_json ?? '';
            if (delta.partial_json && block.id && block.name) options.onToolInput?.({ id: block.id, name: block.name }, delta.partial_json);
          }
          break;
        }
        case 'message_delta':
          answer.usage(data.usage);
          if (data.delta?.stop_reason !== undefined) answer.stopReason = data.delta.stop_reason;
          break;
        case 'error': {
          const type = data.error?.type ?? 'error';
          // An overloaded vendor may say so in the stream; before any of the answer, that is its 529.
          throw new ModelError(`the model at ${where} streamed an error: ${type}: ${data.error?.message ?? ''}`, {
            status: type === 'overloaded_error' ? 529 : undefined,
            retryable: !started && ['overloaded_error', 'api_error', 'rate_limit_error'].includes(type),
          });
        }
      }
    },
    () => started,
    options.signal,
  );
  for (const [, block] of [...blocks.entries()].sort(([a], [b]) => a - b)) {
    if (block.type !== 'tool_use') answer.block(block);
    else {
      let input: unknown = block.input ?? {};
      if (block.json) {
        try {
          input = JSON.parse(block.json);
        } catch {
          throw new ModelError(`the model at ${where} streamed tool input that is not JSON: ${block.json.slice(0, 200)}`);
        }
      }
      answer.block({ ...block, input });
    }
  }
  return answer.done();
}

/** An answer being put together from content blocks and usage reports. */
class Answer {
  private text = '';
  private readonly toolCalls: ToolCall[] = [];
  private readonly thinking: ThinkingBlock[] = [];
  private readonly tokens: ModelUsage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0, thinkingTokens: 0 };
  stopReason: string | null = null;

  block(block: ContentBlock): void {
    if (block.type === 'text') this.text += block.text ?? '';
    else if (block.type === 'thinking') this.thinking.push({ thinking: block.thinking ?? '', signature: block.signature ?? '' });
    else if (block.type === 'redacted_thinking') this.thinking.push({ thinking: '', signature: '', redacted: block.data ?? '' });
    else if (block.type === 'tool_use' && block.id && block.name)
      this.toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
  }

  /** Counts as reported; a later report (`message_delta`'s, cumulative) replaces the fields it has. */
  usage(usage: AnthropicUsage | undefined): void {
    if (!usage) return;
    if (usage.input_tokens != null) this.tokens.inputTokens = usage.input_tokens;
    if (usage.output_tokens != null) this.tokens.outputTokens = usage.output_tokens;
    if (usage.cache_read_input_tokens != null) this.tokens.cacheReadTokens = usage.cache_read_input_tokens;
    if (usage.cache_creation_input_tokens != null) this.tokens.cacheCreationTokens = usage.cache_creation_input_tokens;
  }

  done(): ModelAnswer {
    return {
      text: this.text,
      toolCalls: this.toolCalls,
      ...(this.thinking.length ? { thinking: this.thinking } : {}),
      usage: { ...this.tokens },
      finishReason: this.stopReason,
    };
  }
}

interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

interface ContentBlock {
  type: string;
  text?: string;
  thinking?: string;
  signature?: string;
  id?: string;
  name?: string;
  input?: unknown;
  /** A `redacted_thinking` block's. */
  data?: string;
}

interface StreamedBlock extends ContentBlock {
  /** `input_json_delta` pieces of a tool_use block. */
  json: string;
}

interface AnthropicMessage {
  content?: ContentBlock[];
  stop_reason?: string | null;
  usage?: AnthropicUsage;
}

interface StreamEvent {
  type: string;
  index?: number;
  message?: { usage?: AnthropicUsage };
  content_block?: ContentBlock;
  delta?: { type?: string; text?: string; thinking?: string; signature?: string; partial_json?: string; stop_reason?: string | null };
  usage?: AnthropicUsage;
  error?: { type?: string; message?: string };
}

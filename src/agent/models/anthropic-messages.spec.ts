import { ServerResponse } from 'node:http';
import { json, RecordingUpstream } from '../../../test/utils/recording-upstream';
import { AnthropicMessagesClient, messagesUrl, toMessages } from './anthropic-messages';
import { ChatMessage, ModelError, ToolSpec } from './model-api';

/** Writes these events as Anthropic does: `event: <type>` and the JSON as `data:`. */
function sse(res: ServerResponse, events: Array<Record<string, unknown>>, { end = true } = {}): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const event of events) res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
  if (end) res.end();
}

const FAST = { baseDelayMs: 5, maxDelayMs: 20 };
const tools: ToolSpec[] = [
  { type: 'function', function: { name: 'Read', description: 'Reads a file.', parameters: { type: 'object', properties: { file_path: { type: 'string' } } } } },
];
const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are a test.' },
  { role: 'user', content: 'Read a' },
];

/** A streamed answer: thinking with its signature, text, a tool call whose input comes in pieces, and usage. */
const THINK_THEN_CALL = [
  {
    type: 'message_start',
    message: {
      id: 'msg_1',
      role: 'assistant',
      content: [],
      usage: { input_tokens: 50, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200, output_tokens: 1 },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'The user wants ' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'file a.' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'ping' },
  { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Reading ' } },
  { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'a.' } },
  { type: 'content_block_stop', index: 1 },
  { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'Read', input: {} } },
  { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"file_' } },
  { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: 'path": "a"}' } },
  { type: 'content_block_stop', index: 2 },
  { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 87 } },
  { type: 'message_stop' },
];

describe('AnthropicMessagesClient against a scripted vendor', () => {
  const vendor = new RecordingUpstream();
  let baseUrl: string;
  const client = (extra = {}, retry = {}) =>
    new AnthropicMessagesClient({ baseUrl, model: 'claude-test', apiKey: 'sk-ant-test', ...extra }, { retry: { ...FAST, ...retry } });

  beforeAll(async () => {
    await vendor.start();
    baseUrl = `http://127.0.0.1:${vendor.port}`;
  });
  afterAll(() => vendor.stop());
  beforeEach(() => (vendor.requests.length = 0));

  it('streams thinking with its signature, text as it arrives, a tool call, and the exact usage', async () => {
    vendor.script((_, res) => sse(res, THINK_THEN_CALL));
    const pieces: string[] = [];
    const thoughts: string[] = [];
    const inputs: Array<[string, string, string]> = [];
    const answer = await client({ thinkingBudgetTokens: 2048 }).complete(conversation, tools, {
      onText: (piece) => pieces.push(piece),
      onThinking: (piece) => thoughts.push(piece),
      onToolInput: (call, piece) => inputs.push([call.id, call.name, piece]),
    });
    expect(pieces).toEqual(['Reading ', 'a.']);
    expect(thoughts).toEqual(['The user wants ', 'file a.']);
    expect(inputs).toEqual([
      ['toolu_1', 'Read', '{"file_'],
      ['toolu_1', 'Read', 'path": "a"}'],
    ]);
    expect(answer).toEqual({
      text: 'Reading a.',
      toolCalls: [{ id: 'toolu_1', type: 'function', function: { name: 'Read', arguments: '{"file_path":"a"}' } }],
      thinking: [{ thinking: 'The user wants file a.', signature: 'EqQBCgIYAhIM' }],
      usage: { inputTokens: 50, cacheReadTokens: 1000, cacheCreationTokens: 200, outputTokens: 87, thinkingTokens: 0 },
      finishReason: 'tool_use',
    });

    const [sent] = vendor.requests;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers).toMatchObject({ 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' });
    expect(sent.headers.authorization).toBeUndefined();
    expect(JSON.parse(sent.body)).toEqual({
      model: 'claude-test',
      max_tokens: 8192,
      // Cache breakpoints after the system prompt and at the end of the conversation.
      system: [{ type: 'text', text: 'You are a test.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Read a', cache_control: { type: 'ephemeral' } }] }],
      tools: [{ name: 'Read', description: 'Reads a file.', input_schema: tools[0].function.parameters }],
      thinking: { type: 'enabled', budget_tokens: 2048 },
      stream: true,
    });
  });

  it('sends the thinking back first in its answer, and the tool results grouped in one user message', async () => {
    vendor.script((_, res) => sse(res, THINK_THEN_CALL));
    const first = await client().complete(conversation, tools);
    vendor.script((_, res) =>
      sse(res, [
        { type: 'message_start', message: { usage: { input_tokens: 70, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'a says hi.' } },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } },
      ]),
    );
    const history: ChatMessage[] = [
      ...conversation,
      {
        role: 'assistant',
        content: first.text,
        tool_calls: [...first.toolCalls, { id: 'toolu_2', type: 'function', function: { name: 'LS', arguments: '' } }],
        thinking: first.thinking,
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'hi' },
      { role: 'tool', tool_call_id: 'toolu_2', content: '', isError: true },
      { role: 'user', content: 'and?' },
    ];
    const second = await client().complete(history, tools);
    expect(second).toMatchObject({ text: 'a says hi.', toolCalls: [], finishReason: 'end_turn', usage: { inputTokens: 70, outputTokens: 5 } });
    expect(second.thinking).toBeUndefined();
    expect(JSON.parse(vendor.requests[1].body).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Read a' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'The user wants file a.', signature: 'EqQBCgIYAhIM' },
          { type: 'text', text: 'Reading a.' },
          { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: 'a' } },
          { type: 'tool_use', id: 'toolu_2', name: 'LS', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'hi' },
          { type: 'tool_result', tool_use_id: 'toolu_2', is_error: true },
          { type: 'text', text: 'and?', cache_control: { type: 'ephemeral' } },
        ],
      },
    ]);
  });

  it("thinks as hard as the session's reasoningEffort asks, and not at all for off (max_tokens above the budget)", async () => {
    const done = [
      { type: 'message_start', message: { usage: { input_tokens: 5, output_tokens: 1 } } },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1 } },
    ];
    vendor.script((_, res) => sse(res, done));
    await client({ thinkingBudgetTokens: 4096, maxOutputTokens: 8192 }).complete(conversation, tools, { reasoningEffort: 'high' });
    await client({ thinkingBudgetTokens: 4096, maxOutputTokens: 8192 }).complete(conversation, tools, { reasoningEffort: 'off' });
    const [high, off] = vendor.requests.map((request) => JSON.parse(request.body));
    expect([high.thinking, high.max_tokens]).toEqual([{ type: 'enabled', budget_tokens: 16_384 }, 16_384 + 8192]);
    expect([off.thinking, off.max_tokens]).toEqual([undefined, 8192]);
  });

  it('takes a JSON answer to a streaming request as the whole answer', async () => {
    vendor.script((_, res) =>
      json(res, 200, {
        id: 'msg_2',
        type: 'message',
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Hmm.', signature: 'sig-2' },
          { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va' },
          { type: 'text', text: 'Calling.' },
          { type: 'tool_use', id: 'toolu_9', name: 'Read', input: { file_path: 'b' } },
        ],
        stop_reason: 'tool_use',
        usage: { input_tokens: 12, output_tokens: 34, cache_read_input_tokens: 5, cache_creation_input_tokens: 6 },
      }),
    );
    const answer = await client({ maxOutputTokens: 1000 }).complete(conversation, tools);
    expect(answer).toEqual({
      text: 'Calling.',
      toolCalls: [{ id: 'toolu_9', type: 'function', function: { name: 'Read', arguments: '{"file_path":"b"}' } }],
      thinking: [
        { thinking: 'Hmm.', signature: 'sig-2' },
        { thinking: '', signature: '', redacted: 'EmwKAhgBEgy3va' },
      ],
      usage: { inputTokens: 12, cacheReadTokens: 5, cacheCreationTokens: 6, outputTokens: 34, thinkingTokens: 0 },
      finishReason: 'tool_use',
    });
    expect(JSON.parse(vendor.requests[0].body).max_tokens).toBe(1000);

    // Redacted thinking goes back as it came, in its place.
    await client().complete([...conversation, { role: 'assistant', content: answer.text, tool_calls: answer.toolCalls, thinking: answer.thinking }], tools);
    expect(JSON.parse(vendor.requests[1].body).messages[1].content.slice(0, 2)).toEqual([
      { type: 'thinking', thinking: 'Hmm.', signature: 'sig-2' },
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va' },
    ]);
  });

  it('makes max_tokens larger than a thinking budget that is not below it, as the API requires', async () => {
    vendor.script((_, res) => json(res, 200, { content: [], stop_reason: 'end_turn', usage: {} }));
    await client({ maxOutputTokens: 1024, thinkingBudgetTokens: 4096 }).complete(conversation, []);
    expect(JSON.parse(vendor.requests[0].body)).toMatchObject({ max_tokens: 4096 + 8192, thinking: { type: 'enabled', budget_tokens: 4096 } });
  });

  it('retries a 529 and an overloaded error event before any output, then takes the answer', async () => {
    let calls = 0;
    vendor.script((_, res) => {
      calls++;
      if (calls === 1) return json(res, 529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
      if (calls === 2)
        return sse(res, [
          { type: 'message_start', message: { usage: { input_tokens: 1 } } },
          { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
        ]);
      return sse(res, THINK_THEN_CALL);
    });
    const answer = await client().complete(conversation, tools);
    expect(answer.text).toBe('Reading a.');
    expect(vendor.requests).toHaveLength(3);
  });

  it('does not retry an error event once the answer has begun', async () => {
    vendor.script((_, res) => sse(res, [...THINK_THEN_CALL.slice(0, 9), { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]));
    const error = (await client()
      .complete(conversation, tools)
      .catch((e: unknown) => e)) as ModelError;
    expect(error).toBeInstanceOf(ModelError);
    expect(error.message).toMatch(/streamed an error: overloaded_error: Overloaded/);
    expect(vendor.requests).toHaveLength(1);
  });

  it('gives up on 503s, saying how many attempts and the last status', async () => {
    vendor.script((_, res) => json(res, 503, { type: 'error', error: { type: 'api_error', message: 'down' } }));
    const error = (await client({}, { maxRetries: 1 })
      .complete(conversation, [])
      .catch((e: unknown) => e)) as ModelError;
    expect(vendor.requests).toHaveLength(2);
    expect(error).toMatchObject({ attempts: 2, status: 503 });
    expect(error.message).toMatch(/gave up after 2 attempts; last: status 503/);
  });
});

describe('The Messages conversation', () => {
  it('goes to /v1/messages under an address without a path, else to /messages under it', () => {
    expect(messagesUrl('https://api.anthropic.com')).toBe('https://api.anthropic.com/v1/messages');
    expect(messagesUrl('https://api.anthropic.com/')).toBe('https://api.anthropic.com/v1/messages');
    expect(messagesUrl('https://gw.example.com/anthropic/v1/?key=1')).toBe('https://gw.example.com/anthropic/v1/messages?key=1');
    expect(messagesUrl('http://server/api/v0/agent/models/m')).toBe('http://server/api/v0/agent/models/m/messages');
  });

  it("gives a user message's images as base64 image blocks after its text", () => {
    expect(toMessages([{ role: 'user', content: 'What is this?', images: [{ mediaType: 'image/webp', data: 'UklGRg==' }] }])).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/webp', data: 'UklGRg==' } },
        ],
      },
    ]);
  });

  it("gives a user message's PDFs as document blocks after its images, named by their title", () => {
    expect(toMessages([{ role: 'user', content: 'Summarize.', documents: [{ mediaType: 'application/pdf', data: 'JVBERi0=', name: 'spec.pdf' }] }])).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Summarize.' },
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' }, title: 'spec.pdf' },
        ],
      },
    ]);
  });

  it('gives the images of a tool result inside its tool_result, after its text', () => {
    const call = { id: 'c1', type: 'function' as const, function: { name: 'Read', arguments: '{"file_path":"a.png"}' } };
    expect(
      toMessages([
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'c1', content: 'a.png: an image', images: [{ mediaType: 'image/png', data: 'iVBORw==' }] },
      ])[1],
    ).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'c1',
          content: [
            { type: 'text', text: 'a.png: an image' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw==' } },
          ],
        },
      ],
    });
  });

  it('merges messages of one role, leaves out empty answers, and gives arguments that are not an object as {}', () => {
    expect(
      toMessages([
        { role: 'user', content: 'one' },
        { role: 'user', content: 'two' },
        { role: 'assistant', content: null },
        { role: 'assistant', content: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'X', arguments: '[1' } }] },
      ]),
    ).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'X', input: {} }] },
    ]);
  });
});

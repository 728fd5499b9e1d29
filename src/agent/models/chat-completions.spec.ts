import { ServerResponse } from 'node:http';
import { json, RecordingUpstream } from '../../../test/utils/recording-upstream';
import { ChatCompletionsClient } from './chat-completions';
import { ChatMessage, ModelError, RetryNotice, ToolSpec } from './model-api';

/** Writes these events as a `text/event-stream`, each `data:` a JSON chunk (or `[DONE]`). */
function sse(res: ServerResponse, chunks: unknown[], { end = true } = {}): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const chunk of chunks) res.write(`data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`);
  if (end) res.end();
}

const delta = (fields: Record<string, unknown>, finish: string | null = null) => ({ choices: [{ index: 0, delta: fields, finish_reason: finish }] });
const FAST = { baseDelayMs: 5, maxDelayMs: 20 };
const tools: ToolSpec[] = [{ type: 'function', function: { name: 'Read', description: 'Reads a file.', parameters: { type: 'object' } } }];
const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are a test.' },
  { role: 'user', content: 'Read a' },
];

describe('ChatCompletionsClient against a scripted vendor', () => {
  const vendor = new RecordingUpstream();
  let baseUrl: string;
  const client = (retry = {}) =>
    new ChatCompletionsClient({ baseUrl, model: 'vendor-model', apiKey: 'sk-test', maxOutputTokens: 100 }, { retry: { ...FAST, ...retry } });

  beforeAll(async () => {
    await vendor.start();
    baseUrl = `http://127.0.0.1:${vendor.port}/v1`;
  });
  afterAll(() => vendor.stop());
  beforeEach(() => (vendor.requests.length = 0));

  it("sends the session's reasoningEffort as reasoning_effort where the API knows the value, and nothing for off", async () => {
    vendor.script((_, res) => sse(res, [delta({ content: 'ok' }, 'stop'), '[DONE]']));
    for (const effort of ['xhigh', 'low', 'off']) await client().complete(conversation, tools, { reasoningEffort: effort });
    expect(vendor.requests.map((request) => JSON.parse(request.body).reasoning_effort)).toEqual(['high', 'low', undefined]);
  });

  it("sends a user message's images as image_url parts after its text (data URLs)", async () => {
    vendor.script((_, res) => sse(res, [delta({ content: 'ok' }, 'stop'), '[DONE]']));
    await client().complete([{ role: 'user', content: 'What is this?', images: [{ mediaType: 'image/png', data: 'iVBORw0KGgo=' }] }], tools);
    expect(JSON.parse(vendor.requests[0].body).messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
        ],
      },
    ]);
  });

  it('sends the images of tool results in a user message after all the results of the answer (a tool message takes none)', async () => {
    vendor.script((_, res) => sse(res, [delta({ content: 'ok' }, 'stop'), '[DONE]']));
    const calls = ['c1', 'c2'].map((id) => ({ id, type: 'function' as const, function: { name: 'Read', arguments: '{}' } }));
    await client().complete(
      [
        ...conversation,
        { role: 'assistant', content: null, tool_calls: calls },
        { role: 'tool', tool_call_id: 'c1', content: 'a.png: an image', images: [{ mediaType: 'image/png', data: 'iVBORw==' }] },
        { role: 'tool', tool_call_id: 'c2', content: 'text' },
      ],
      tools,
    );
    expect(JSON.parse(vendor.requests[0].body).messages.slice(3)).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: 'a.png: an image' },
      { role: 'tool', tool_call_id: 'c2', content: 'text' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'The images of the tool results above (c1):' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw==' } },
        ],
      },
    ]);
  });

  it('sends a failed tool result as Chat Completions knows it: no isError field, which strict vendors refuse', async () => {
    vendor.script((_, res) => sse(res, [delta({ content: 'ok' }, 'stop'), '[DONE]']));
    const history: ChatMessage[] = [
      ...conversation,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'Read', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'no such file', isError: true },
    ];
    await client().complete(history, tools);
    expect(JSON.parse(vendor.requests[0].body).messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_1', content: 'no such file' });
  });

  it('streams: text as it arrives, tool calls assembled by index, reasoning, and the exact usage of the last chunk', async () => {
    vendor.script((_, res) =>
      sse(res, [
        delta({ role: 'assistant', reasoning_content: 'Look ' }),
        delta({ reasoning_content: 'first.' }),
        delta({ content: 'Reading ' }),
        delta({ content: 'a.' }),
        delta({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'Read', arguments: '{"file_' } }] }),
        delta({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'LS', arguments: '{}' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: 'path":"a"}' } }] }, 'tool_calls'),
        {
          choices: [],
          usage: {
            prompt_tokens: 120,
            completion_tokens: 40,
            prompt_tokens_details: { cached_tokens: 20 },
            completion_tokens_details: { reasoning_tokens: 15 },
          },
        },
        '[DONE]',
      ]),
    );
    const pieces: string[] = [];
    const thoughts: string[] = [];
    const inputs: Array<[string, string, string]> = [];
    const answer = await client().complete(conversation, tools, {
      onText: (piece) => pieces.push(piece),
      onThinking: (piece) => thoughts.push(piece),
      onToolInput: (call, piece) => inputs.push([call.id, call.name, piece]),
    });
    expect(pieces).toEqual(['Reading ', 'a.']);
    expect(thoughts).toEqual(['Look ', 'first.']);
    expect(inputs).toEqual([
      ['call_1', 'Read', '{"file_'],
      ['call_2', 'LS', '{}'],
      ['call_1', 'Read', 'path":"a"}'],
    ]);
    expect(answer).toEqual({
      text: 'Reading a.',
      toolCalls: [
        { id: 'call_1', type: 'function', function: { name: 'Read', arguments: '{"file_path":"a"}' } },
        { id: 'call_2', type: 'function', function: { name: 'LS', arguments: '{}' } },
      ],
      reasoning: { field: 'reasoning_content', content: 'Look first.' },
      usage: { inputTokens: 100, cacheReadTokens: 20, cacheCreationTokens: 0, outputTokens: 25, thinkingTokens: 15 },
      finishReason: 'tool_calls',
    });
    const [sent] = vendor.requests;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers).toMatchObject({ authorization: 'Bearer sk-test', accept: 'text/event-stream, application/json' });
    expect(JSON.parse(sent.body)).toEqual({
      model: 'vendor-model',
      messages: conversation,
      tools,
      max_tokens: 100,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('takes a JSON answer to a streaming request as the whole answer, `reasoning` and usage as before', async () => {
    vendor.script((_, res) =>
      json(res, 200, {
        choices: [{ finish_reason: 'stop', message: { role: 'assistant', content: 'Done.', reasoning: 'Easy.' } }],
        usage: { prompt_tokens: 10, completion_tokens: 5 },
      }),
    );
    const pieces: string[] = [];
    const answer = await client().complete(conversation, [], { onText: (piece) => pieces.push(piece) });
    expect(answer).toEqual({
      text: 'Done.',
      toolCalls: [],
      reasoning: { field: 'reasoning', content: 'Easy.' },
      usage: { inputTokens: 10, cacheReadTokens: 0, cacheCreationTokens: 0, outputTokens: 5, thinkingTokens: 0 },
      finishReason: 'stop',
    });
    expect(pieces).toEqual([]);
  });

  it('sends Anthropic thinking blocks of earlier answers nowhere: the Chat Completions conversation has no such field', async () => {
    vendor.script((_, res) => sse(res, [delta({ content: 'ok' }, 'stop'), '[DONE]']));
    await client().complete(
      [...conversation, { role: 'assistant', content: 'x', thinking: [{ thinking: 't', signature: 's' }] }, { role: 'user', content: 'go on' }],
      [],
    );
    expect(JSON.parse(vendor.requests[0].body).messages[2]).toEqual({ role: 'assistant', content: 'x' });
  });

  it('waits as a 429 answer’s Retry-After asks, then takes the answer', async () => {
    let calls = 0;
    vendor.script((_, res) =>
      ++calls === 1 ? json(res, 429, { error: { message: 'slow down' } }, { 'retry-after': '1' }) : sse(res, [delta({ content: 'hi' }, 'stop'), '[DONE]']),
    );
    const retries: RetryNotice[] = [];
    const started = Date.now();
    const answer = await client().complete(conversation, [], { onRetry: (notice) => retries.push(notice) });
    expect(answer.text).toBe('hi');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(vendor.requests).toHaveLength(2);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ attempt: 1, delayMs: 1000 });
    expect(retries[0].error.status).toBe(429);
  });

  it('gives up on 503s after the retries allowed, saying how many attempts and the last status', async () => {
    vendor.script((_, res) => json(res, 503, { error: { message: 'overloaded' } }));
    const error = (await client({ maxRetries: 2 })
      .complete(conversation, [])
      .catch((e: unknown) => e)) as ModelError;
    expect(error).toBeInstanceOf(ModelError);
    expect(vendor.requests).toHaveLength(3);
    expect(error.attempts).toBe(3);
    expect(error.status).toBe(503);
    expect(error.message).toMatch(/answered 503.*overloaded.*gave up after 3 attempts; last: status 503/s);
  });

  it('gives up when the next wait would pass the total time allowed', async () => {
    vendor.script((_, res) => json(res, 500, {}, { 'retry-after': '5' }));
    const error = (await client({ maxTotalMs: 1_000 })
      .complete(conversation, [])
      .catch((e: unknown) => e)) as ModelError;
    expect(vendor.requests).toHaveLength(1);
    expect(error.attempts).toBe(1);
    expect(error.message).toMatch(/answered 500/);
  });

  it('does not retry a 400', async () => {
    vendor.script((_, res) => json(res, 400, { error: { message: 'bad tools' } }));
    const error = (await client()
      .complete(conversation, [])
      .catch((e: unknown) => e)) as ModelError;
    expect(vendor.requests).toHaveLength(1);
    expect(error).toMatchObject({ status: 400, attempts: 1, retryable: false });
  });

  it('works with a vendor that refuses stream_options: asked again without it, and not asked it again', async () => {
    vendor.script((request, res) =>
      'stream_options' in JSON.parse(request.body)
        ? json(res, 400, { error: { message: 'Unrecognized request argument supplied: stream_options' } })
        : sse(res, [delta({ content: 'ok' }, 'stop'), '[DONE]']),
    );
    const strict = client();
    expect((await strict.complete(conversation, [])).text).toBe('ok');
    expect((await strict.complete(conversation, [])).text).toBe('ok');
    expect(vendor.requests.map((request) => 'stream_options' in JSON.parse(request.body))).toEqual([true, false, false]);
    // Another 400 is not taken for that one.
    vendor.script((_, res) => json(res, 400, { error: { message: 'bad tools' } }));
    await expect(client().complete(conversation, [])).rejects.toMatchObject({ status: 400 });
    expect(vendor.requests).toHaveLength(4);
  });

  it('does not retry once the turn is aborted, during the wait or the call', async () => {
    vendor.script((_, res) => json(res, 429, {}, { 'retry-after': '30' }));
    const waiting = new AbortController();
    const call = client().complete(conversation, [], { signal: waiting.signal, onRetry: () => waiting.abort() });
    await expect(call).rejects.toThrow();
    expect(vendor.requests).toHaveLength(1);

    vendor.requests.length = 0;
    const calling = new AbortController();
    vendor.script(() => calling.abort());
    await expect(client().complete(conversation, [], { signal: calling.signal })).rejects.toThrow();
    expect(vendor.requests).toHaveLength(1);
  });

  it('retries a vendor it cannot reach, then says so', async () => {
    const closed = new RecordingUpstream();
    await closed.start();
    const port = closed.port;
    await closed.stop();
    const error = (await new ChatCompletionsClient({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm' }, { retry: { ...FAST, maxRetries: 1 } })
      .complete(conversation, [])
      .catch((e: unknown) => e)) as ModelError;
    expect(error.message).toMatch(/could not be reached.*gave up after 2 attempts; last: no answer/s);
  });

  it('does not retry a stream cut once the answer has begun: the cut is an error', async () => {
    vendor.script((_, res) => {
      sse(res, [delta({ content: 'Half an ans' })], { end: false });
      setTimeout(() => res.destroy(), 20);
    });
    const pieces: string[] = [];
    const error = (await client()
      .complete(conversation, [], { onText: (piece) => pieces.push(piece) })
      .catch((e: unknown) => e)) as ModelError;
    expect(error).toBeInstanceOf(ModelError);
    expect(error.message).toMatch(/broke off/);
    expect(pieces).toEqual(['Half an ans']);
    expect(vendor.requests).toHaveLength(1);
  });
});

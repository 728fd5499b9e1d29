import { readFileSync } from 'node:fs';
import { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { json, RecordedRequest, RecordingUpstream } from '../utils/recording-upstream';
import { openStream } from '../utils/sse';
import { TestApp } from '../utils/test-app';
import { agentProcessFixture, Json } from '../utils/fixtures/agent-process';

/** Writes these events as a `text/event-stream`: Anthropic's with their `event:` name, Chat Completions' (no `type`) as data only. */
function sse(res: ServerResponse, events: Array<Json | string>): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const event of events) {
    const data = typeof event === 'string' ? event : JSON.stringify(event);
    res.write(`${typeof event === 'object' && event.type ? `event: ${String(event.type)}\n` : ''}data: ${data}\n\n`);
  }
  res.end();
}

const body = (request: RecordedRequest): Json => JSON.parse(request.body) as Json;

/**
 * The reference agent as a real process, against the real server and scripted vendors on loopback, with the
 * organization's custom models through the relay: an Anthropic Messages model that thinks and calls a tool (the
 * thinking, signed, goes back to it and is stored), and a Chat Completions model that first answers 429.
 */
describe('The agent process with custom models of both APIs', () => {
  const fixture = agentProcessFixture();
  const { computerWithAgent, say, untilIdle, messages } = fixture;
  let t: TestApp;
  const vendor = new RecordingUpstream();
  beforeAll(async () => {
    t = fixture.t;
    await vendor.start();
  });
  afterAll(() => vendor.stop());
  beforeEach(() => (vendor.requests.length = 0));

  it('works with an Anthropic model through the relay: streamed thinking and a tool call, the signed thinking sent back and stored, the usage reported', async () => {
    const secret = 'sk-ant-team-secret-1234567890';
    vendor.script((request, res) => {
      const last = (body(request).messages as Json[]).at(-1)!;
      const toolTurn = Array.isArray(last.content) && last.content.some((block: Json) => block.type === 'tool_result');
      if (!toolTurn) {
        return sse(res, [
          { type: 'message_start', message: { usage: { input_tokens: 400, cache_read_input_tokens: 0, cache_creation_input_tokens: 1500, output_tokens: 1 } } },
          { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'A note is a file: ' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'use Create.' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EuYBCkQYAiJA-signed' } },
          { type: 'content_block_stop', index: 0 },
          { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_01', name: 'Create', input: {} } },
          { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"file_path": "note.txt", ' } },
          { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"content": "from claude\\n"}' } },
          { type: 'content_block_stop', index: 1 },
          { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 60 } },
          { type: 'message_stop' },
        ]);
      }
      return sse(res, [
        { type: 'message_start', message: { usage: { input_tokens: 30, cache_read_input_tokens: 1500, cache_creation_input_tokens: 0, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Wrote ' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'note.txt.' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 8 } },
        { type: 'message_stop' },
      ]);
    });
    const { owner, computerId, workspace, output } = await computerWithAgent({});
    const customModels = [
      {
        id: 'team-claude',
        model: 'vendor-claude',
        provider: 'anthropic',
        baseUrl: `http://127.0.0.1:${vendor.port}/v1`,
        apiKey: secret,
        enableThinking: true,
        thinkingMaxTokens: 2048,
      },
    ];
    await t.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).send({ settings: { customModels } }).expect(200);
    const sessionId = await say(computerId, 'Write a note.');
    const session = await untilIdle(sessionId, output);

    expect(readFileSync(join(workspace, 'note.txt'), 'utf8')).toBe('from claude\n');
    const all = await messages(sessionId);
    expect(all.map((m) => [m.role, m.modelId ?? null])).toEqual([
      ['user', null],
      ['assistant', 'team-claude'],
      ['tool', null],
      ['assistant', 'team-claude'],
    ]);
    expect(all[1].content).toEqual([
      { type: 'thinking', thinking: 'A note is a file: use Create.', signature: 'EuYBCkQYAiJA-signed', signatureProvider: 'anthropic' },
      { type: 'tool_use', id: 'toolu_01', name: 'Create', input: { file_path: 'note.txt', content: 'from claude\n' } },
    ]);
    expect(all[2].content[0]).toMatchObject({ type: 'tool_result', toolUseId: 'toolu_01', isError: false });
    expect(all[3].content).toEqual([{ type: 'text', text: 'Wrote note.txt.' }]);
    expect(session.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 430, cacheCreationTokens: 1500, cacheReadTokens: 1500, outputTokens: 68 });

    // What reached the vendor: the Messages API, the key as x-api-key, thinking on, and the signed thinking back first.
    expect(vendor.requests).toHaveLength(2);
    const [first, second] = vendor.requests;
    expect(first.path).toBe('/v1/messages');
    expect(first.headers).toMatchObject({ 'x-api-key': secret, 'anthropic-version': '2023-06-01' });
    expect(first.headers.authorization).toBeUndefined();
    expect(body(first)).toMatchObject({
      model: 'vendor-claude',
      max_tokens: 8192,
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      system: [{ type: 'text', text: expect.stringContaining('You are a coding agent'), cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Write a note.' }] }],
    });
    expect((body(first).tools as Json[]).find((tool) => tool.name === 'Create')).toMatchObject({ input_schema: { type: 'object' } });
    expect((body(second).messages as Json[]).slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'A note is a file: use Create.', signature: 'EuYBCkQYAiJA-signed' },
          { type: 'tool_use', id: 'toolu_01', name: 'Create', input: { file_path: 'note.txt', content: 'from claude\n' } },
        ],
      },
      // The end of the conversation is the cache breakpoint the next call extends.
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: expect.any(String), cache_control: { type: 'ephemeral' } }],
      },
    ]);
    expect(output()).not.toContain(secret);
  });

  it('uses its own Anthropic model with AGENT_MODEL_PROVIDER=anthropic: /v1/messages under a base URL without a path, its key as x-api-key', async () => {
    vendor.script((_, res) =>
      sse(res, [
        { type: 'message_start', message: { usage: { input_tokens: 11, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi.' } },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } },
      ]),
    );
    const { computerId, output } = await computerWithAgent({
      AGENT_MODEL_PROVIDER: 'anthropic',
      AGENT_MODEL_BASE_URL: `http://127.0.0.1:${vendor.port}`,
      AGENT_MODEL: 'own-claude',
      AGENT_MODEL_API_KEY: 'sk-ant-own',
      AGENT_MODEL_MAX_OUTPUT_TOKENS: '1000',
    });
    const sessionId = await say(computerId, 'Hello');
    const session = await untilIdle(sessionId, output);
    expect((await messages(sessionId))[1]).toMatchObject({ modelId: 'own-claude', content: [{ type: 'text', text: 'Hi.' }] });
    expect(session.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 11, outputTokens: 2 });
    expect(vendor.requests[0].path).toBe('/v1/messages');
    expect(vendor.requests[0].headers).toMatchObject({ 'x-api-key': 'sk-ant-own', 'anthropic-version': '2023-06-01' });
    expect(body(vendor.requests[0])).toMatchObject({ model: 'own-claude', max_tokens: 1000, stream: true });
    expect(body(vendor.requests[0]).thinking).toBeUndefined();
  });

  it('waits as a Chat Completions model’s 429 asks (Retry-After, through the relay) and then takes its streamed answer', async () => {
    vendor.script((_, res) =>
      vendor.requests.length === 1
        ? json(res, 429, { error: { message: 'Rate limit reached' } }, { 'retry-after': '1' })
        : sse(res, [
            { choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello ' } }] },
            { choices: [{ index: 0, delta: { content: 'again.' }, finish_reason: 'stop' }] },
            { choices: [], usage: { prompt_tokens: 90, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 40 } } },
            '[DONE]',
          ]),
    );
    const { owner, computerId, output } = await computerWithAgent({});
    const customModels = [{ id: 'team-gpt', model: 'vendor-gpt', baseUrl: `http://127.0.0.1:${vendor.port}/v1`, apiKey: 'sk-team-0123456789' }];
    await t.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).send({ settings: { customModels } }).expect(200);
    const sessionId = await say(computerId, 'Say hello.');
    const session = await untilIdle(sessionId, output);

    const all = await messages(sessionId);
    expect(all.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(all[1].content).toEqual([{ type: 'text', text: 'Hello again.' }]);
    expect(session.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 50, cacheReadTokens: 40, outputTokens: 7 });
    expect(vendor.requests).toHaveLength(2);
    expect(vendor.requests.every((request) => request.path === '/v1/chat/completions')).toBe(true);
    expect(body(vendor.requests[1])).toMatchObject({ model: 'vendor-gpt', stream: true, stream_options: { include_usage: true } });
    expect(output()).toMatch(/model call 1 failed \(.*answered 429.*\); retrying in 1000 ms/);
  });

  it('gives up on a model that keeps answering 503, and the session says how often it was retried and the last status', async () => {
    // Retry-After: 0 lets the retries come at once.
    vendor.script((_, res) => json(res, 503, { error: { message: 'Service unavailable' } }, { 'retry-after': '0' }));
    const { owner, computerId, output } = await computerWithAgent({});
    const customModels = [{ id: 'team-down', model: 'vendor-down', baseUrl: `http://127.0.0.1:${vendor.port}/v1` }];
    await t.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).send({ settings: { customModels } }).expect(200);
    const sessionId = await say(computerId, 'Hello?');
    await untilIdle(sessionId, output);
    const all = await messages(sessionId);
    expect(all.map((m) => m.role)).toEqual(['user', 'system']);
    expect(all[1].content[0].text).toMatch(
      /^The model failed \(retried 5 times\): .*answered 503.*Service unavailable.*gave up after 6 attempts; last: status 503/s,
    );
    expect(vendor.requests).toHaveLength(6);
  });
  it('streams the answer to the session’s viewers as message.delta while the model writes it, and stores it whole', async () => {
    const pieces = ['The tests ', 'all pass: ', '42 of 42, ', 'in 3.1 s.'];
    vendor.script((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const write = (event: Json | string) => res.write(`data: ${typeof event === 'string' ? event : JSON.stringify(event)}\n\n`);
      // A pause between pieces longer than the agent's 100 ms coalescing: the viewer sees the answer grow.
      void (async () => {
        for (const piece of pieces) {
          write({ choices: [{ index: 0, delta: { content: piece } }] });
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
        write({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
        write('[DONE]');
        res.end();
      })();
    });
    const { owner, computerId, output } = await computerWithAgent({});
    const customModels = [{ id: 'team-gpt', model: 'vendor-gpt', baseUrl: `http://127.0.0.1:${vendor.port}/v1` }];
    await t.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).send({ settings: { customModels } }).expect(200);
    const viewer = await openStream((await t.app.getUrl()).replace('[::1]', '127.0.0.1'), '/api/v0/events?types=message.delta', owner.auth);
    try {
      const sessionId = await say(computerId, 'Run the tests.');
      const text = pieces.join('');
      const streamed = () =>
        viewer.events.map((event) => (JSON.parse(event.data) as Json).data as Json).filter((data) => data.sessionId === sessionId && data.step === 0);
      // The first piece is seen before the answer is stored: it is live, not a replay.
      await viewer.until(() => streamed().length > 0, 'the first delta');
      expect((await messages(sessionId)).map((m) => m.role)).toEqual(['user']);
      await untilIdle(sessionId, output);
      await viewer.until(
        () =>
          streamed()
            .map((data) => data.text)
            .join('') === text,
        'the whole answer as deltas',
      );
      expect(streamed().length).toBeGreaterThan(1);
      expect(viewer.events.every((event) => event.id === undefined)).toBe(true);
      const all = await messages(sessionId);
      expect(all[1].content).toEqual([{ type: 'text', text }]);
    } finally {
      viewer.close();
    }
  });
  it("passes the session's reasoningEffort to the model (reasoning_effort through the relay)", async () => {
    vendor.script((_, res) => sse(res, [{ choices: [{ index: 0, delta: { content: 'Thought hard.' }, finish_reason: 'stop' }] }, '[DONE]']));
    const { owner, computerId, output } = await computerWithAgent({});
    const customModels = [{ id: 'team-gpt', model: 'vendor-gpt', baseUrl: `http://127.0.0.1:${vendor.port}/v1` }];
    await t.http().patch('/api/v0/organization/enterprise-controls').set(owner.auth).send({ settings: { customModels } }).expect(200);
    const created = await t
      .http()
      .post('/api/v0/sessions')
      .set(owner.auth)
      .send({ computerId, sessionSettings: { reasoningEffort: 'xhigh' } })
      .expect(201);
    const sessionId = created.body.sessionId as string;
    await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Think about it.', computerId }).expect(200);
    await untilIdle(sessionId, output);
    // xhigh is above what Chat Completions knows: the highest it does.
    expect(body(vendor.requests[0])).toMatchObject({ model: 'vendor-gpt', reasoning_effort: 'high' });
  });
});

import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Role } from '../../src/modules/auth';
import { createUser } from '../utils/factories';
import { RecordedRequest, RecordingUpstream } from '../utils/recording-upstream';
import { openStream, SseStream } from '../utils/sse';
import { TestApp } from '../utils/test-app';
import { agentProcessFixture, Json } from '../utils/fixtures/agent-process';

/** Starts a `text/event-stream` answer; each event goes with its `event:` name when it has a `type` (Anthropic's). */
function stream(res: ServerResponse): (event: Json | string) => void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  return (event) => {
    const data = typeof event === 'string' ? event : JSON.stringify(event);
    res.write(`${typeof event === 'object' && event.type ? `event: ${String(event.type)}\n` : ''}data: ${data}\n\n`);
  };
}

/** Whether an Anthropic request ends with tool results: the model's second call of the turn. */
const lastIsToolResult = (request: RecordedRequest) => {
  const last = (JSON.parse(request.body).messages as Json[]).at(-1)!;
  return Array.isArray(last.content) && last.content.some((block: Json) => block.type === 'tool_result');
};

/** The `message.delta` data of one session a stream got, in order. */
const deltasOf = (viewer: SseStream, sessionId: string): Json[] =>
  viewer.events
    .filter((event) => event.event === 'message.delta')
    .map((event) => (JSON.parse(event.data) as Json).data as Json)
    .filter((data) => data.sessionId === sessionId);
const joined = (deltas: Json[], kind: string) =>
  deltas
    .filter((data) => data.kind === kind)
    .map((data) => data.text as string)
    .join('');

/**
 * The reference agent as a real process streams more than the answer's text: an Anthropic model's thinking and tool
 * call as it writes them, a command's output as it runs (under Agent Shield, on by default), a Chat Completions
 * model's `reasoning_content`; and the server sends none of it to a viewer who may not read the session's messages.
 * Each "before it is stored" is shown by holding the model or the command until the viewer has seen the delta.
 */
describe('The agent process streams thinking, tool calls and tool output as message.delta', () => {
  const fixture = agentProcessFixture();
  const { computerWithAgent, say, untilIdle, messages, setControls } = fixture;
  let t: TestApp;
  let base: string;
  const vendor = new RecordingUpstream();
  beforeAll(async () => {
    t = fixture.t;
    base = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    await vendor.start();
  });
  afterAll(() => vendor.stop());
  beforeEach(() => (vendor.requests.length = 0));

  it("streams an Anthropic model's thinking, then its tool call, then the command's output while it runs, before the result is stored", async () => {
    const command = 'echo first line; while [ ! -e go ]; do sleep 0.05; done; echo second line';
    const input = JSON.stringify({ command });
    vendor.script((request, res) => {
      const write = stream(res);
      if (lastIsToolResult(request)) {
        for (const event of [
          { type: 'message_start', message: { usage: { input_tokens: 30, output_tokens: 1 } } },
          { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Both lines printed.' } },
          { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } },
        ])
          write(event);
        return void res.end();
      }
      for (const event of [
        { type: 'message_start', message: { usage: { input_tokens: 400, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Run it, ' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'and watch.' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EuYBsigned' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_01', name: 'Execute', input: {} } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: input.slice(0, 12) } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: input.slice(12) } },
        { type: 'content_block_stop', index: 1 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 60 } },
      ])
        write(event);
      res.end();
    });
    const { owner, computerId, workspace, output, child } = await computerWithAgent({});
    const customModels = [
      { id: 'team-claude', model: 'vendor-claude', provider: 'anthropic', baseUrl: `http://127.0.0.1:${vendor.port}/v1`, enableThinking: true },
    ];
    // Members see only their own sessions: this one may not read the owner's.
    await setControls({ customModels, restrictMemberVisibility: true });
    const member = await createUser(t, Role.Member, { id: owner.organizationId, slug: owner.organizationSlug });
    const viewer = await openStream(base, '/api/v0/events', owner.auth);
    const outsider = await openStream(base, '/api/v0/events?types=message.delta', member.auth);
    try {
      const sessionId = await say(computerId, 'Print two lines.');
      const live = () => deltasOf(viewer, sessionId);
      await viewer.until(() => joined(live(), 'tool_output').includes('first line\n'), 'the first line of output');
      // The command still runs: its result is not stored, and what the model wrote came before.
      expect((await messages(sessionId)).map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(joined(live(), 'thinking')).toBe('Run it, and watch.');
      expect(joined(live(), 'tool_input')).toBe(input);
      expect(joined(live(), 'tool_output')).toBe('first line\n');
      const kinds = live().map((data) => data.kind);
      expect(kinds.indexOf('thinking')).toBeLessThan(kinds.indexOf('tool_input'));
      for (const data of live().filter((data) => data.kind === 'tool_input' || data.kind === 'tool_output'))
        expect(data).toMatchObject({ step: 0, toolUseId: 'toolu_01', toolName: 'Execute' });

      writeFileSync(join(workspace, 'go'), '');
      await untilIdle(sessionId, output);
      await viewer.until(() => joined(live(), 'tool_output') === 'first line\nsecond line\n', 'the second line of output');
      const all = await messages(sessionId);
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(all[1].content).toEqual([
        { type: 'thinking', thinking: 'Run it, and watch.', signature: 'EuYBsigned', signatureProvider: 'anthropic' },
        { type: 'tool_use', id: 'toolu_01', name: 'Execute', input: { command } },
      ]);
      expect(all[2].content).toEqual([{ type: 'tool_result', toolUseId: 'toolu_01', content: 'first line\nsecond line\n[exit code 0]', isError: false }]);
      expect(joined(live(), 'text')).toBe('Both lines printed.');
      expect(
        live()
          .filter((data) => data.kind === 'text')
          .every((data) => data.step === 1),
      ).toBe(true);
      // The tool's output came before its result was stored, on the same stream.
      const order = viewer.events.map((event) =>
        event.event === 'message.delta' ? JSON.parse(event.data).data.kind : (JSON.parse(event.data) as Json).data?.role,
      );
      expect(order.indexOf('tool_output')).toBeLessThan(order.indexOf('tool'));

      // The member sees none of it. Once the agent is stopped, the member's own turn sends a delta: the member's stream
      // takes deltas in the order they came, so once it has that one, every delta before it was weighed.
      child.kill('SIGTERM');
      await once(child, 'exit');
      const own = (await t.http().post('/api/v0/sessions').set(member.auth).send({}).expect(201)).body.sessionId as string;
      await t.http().post(`/api/v0/sessions/${own}/messages`).set(member.auth).send({ text: 'Mine.' }).expect(200);
      const claim = await t.http().post('/api/v0/agent/claims').set(member.auth).send({}).expect(200);
      expect(claim.body.work).toMatchObject({ sessionId: own });
      await t.http().post(`/api/v0/agent/sessions/${own}/deltas`).set(member.auth).send({ turnId: claim.body.work.turnId, step: 0, text: 'mine' }).expect(202);
      await outsider.until((x) => x.events.length > 0, "the member's own delta");
      expect(outsider.events.map((event) => (JSON.parse(event.data) as Json).data.sessionId)).toEqual([own]);
    } finally {
      viewer.close();
      outsider.close();
    }
  });

  it("streams a Chat Completions model's reasoning_content as thinking, before its answer is stored", async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    vendor.script(async (_, res) => {
      const write = stream(res);
      write({ choices: [{ index: 0, delta: { role: 'assistant', reasoning_content: 'Weigh the options. ' } }] });
      write({ choices: [{ index: 0, delta: { reasoning_content: 'Pick one.' } }] });
      // The answer waits until the viewer has seen the reasoning.
      await held;
      write({ choices: [{ index: 0, delta: { content: 'Option B.' }, finish_reason: 'stop' }] });
      write({ choices: [], usage: { prompt_tokens: 50, completion_tokens: 20, completion_tokens_details: { reasoning_tokens: 12 } } });
      write('[DONE]');
      res.end();
    });
    const { owner, computerId, output } = await computerWithAgent({});
    await setControls({ customModels: [{ id: 'team-gpt', model: 'vendor-gpt', baseUrl: `http://127.0.0.1:${vendor.port}/v1` }] });
    const viewer = await openStream(base, '/api/v0/events?types=message.delta', owner.auth);
    try {
      const sessionId = await say(computerId, 'Choose.');
      await viewer.until(() => joined(deltasOf(viewer, sessionId), 'thinking') === 'Weigh the options. Pick one.', 'the reasoning');
      expect((await messages(sessionId)).map((m) => m.role)).toEqual(['user']);
      expect(deltasOf(viewer, sessionId).every((data) => data.kind === 'thinking' && data.step === 0 && data.toolUseId === undefined)).toBe(true);
      release();
      await untilIdle(sessionId, output);
      await viewer.until(() => joined(deltasOf(viewer, sessionId), 'text') === 'Option B.', 'the answer');
      expect((await messages(sessionId))[1].content).toEqual([
        { type: 'thinking', thinking: 'Weigh the options. Pick one.', signature: '', signatureProvider: 'generic-chat-completion-api' },
        { type: 'text', text: 'Option B.' },
      ]);
    } finally {
      release();
      viewer.close();
    }
  });
});

import { Delta, DELTA_MAX_CHARS, DeltaPublisher } from './delta-publisher';

const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

describe('DeltaPublisher', () => {
  it('coalesces text for the flush interval, and numbers the model calls of the turn', async () => {
    const sent: Array<[number, string]> = [];
    const deltas = new DeltaPublisher(async ({ step, text }) => void sent.push([step, text]), { flushMs: 20 });
    deltas.nextStep();
    deltas.onText('Hel');
    deltas.onText('lo');
    expect(sent).toEqual([]);
    await tick(40);
    expect(sent).toEqual([[0, 'Hello']]);
    deltas.onText(' world');
    deltas.nextStep();
    deltas.onText('Next');
    await deltas.close();
    expect(sent).toEqual([
      [0, 'Hello'],
      [0, ' world'],
      [1, 'Next'],
    ]);
    expect(deltas.step).toBe(1);
  });

  it('sends at once past the size threshold, one request at a time, in order, and splits what is over the server limit', async () => {
    const sent: Array<[number, string]> = [];
    let release: () => void = () => undefined;
    const deltas = new DeltaPublisher(
      ({ step, text }) => {
        sent.push([step, text]);
        return new Promise<void>((resolve) => (release = resolve));
      },
      { flushMs: 10_000, flushChars: 4 },
    );
    deltas.onText('abcd');
    expect(sent).toEqual([[0, 'abcd']]);
    deltas.onText('ef');
    deltas.onText('x'.repeat(DELTA_MAX_CHARS));
    expect(sent).toHaveLength(1);
    release();
    await tick();
    expect(sent[1]).toEqual([0, `ef${'x'.repeat(DELTA_MAX_CHARS - 2)}`]);
    release();
    await tick();
    expect(sent[2]).toEqual([0, 'xx']);
    release();
    await deltas.close();
  });

  it('never throws nor blocks: text that cannot be sent is dropped, and a 429 quiets it for Retry-After', async () => {
    const sent: string[] = [];
    let fail = true;
    const deltas = new DeltaPublisher(
      async ({ text }) => {
        if (fail) throw Object.assign(new Error('429'), { wait: 50 });
        sent.push(text);
      },
      { flushMs: 1, retryAfterOf: (error) => (error as { wait: number }).wait },
    );
    deltas.onText('lost');
    await tick(10);
    fail = false;
    deltas.onText('quiet');
    await tick(10);
    expect(sent).toEqual([]);
    await tick(60);
    deltas.onText('back');
    await deltas.close();
    expect(sent).toEqual(['back']);
  });

  it('coalesces per step, kind and tool call, in the order each began, and carries the call with the tool kinds', async () => {
    const sent: Delta[] = [];
    const deltas = new DeltaPublisher(async (delta) => void sent.push(delta), { flushMs: 10_000 });
    const ls = { id: 'call_1', name: 'Execute' };
    const read = { id: 'call_2', name: 'Read' };
    deltas.nextStep();
    deltas.onThinking('Look ');
    deltas.onText('I will ');
    deltas.onThinking('first.');
    deltas.onToolInput(ls, '{"command":');
    deltas.onToolInput(read, '{"file_path":');
    deltas.onText('look.');
    deltas.onToolInput(ls, '"ls"}');
    deltas.onToolInput(read, '"a"}');
    // The answer is in: its step's text goes, and the tools' output is of the same step, until the next model call.
    deltas.flush();
    deltas.onToolOutput(ls, 'a\n');
    deltas.onToolOutput(read, '1\tx\n');
    deltas.onToolOutput(ls, 'b\n');
    deltas.nextStep();
    deltas.onText('Done.');
    // A tool kind without its call is one the server would refuse: never sent.
    deltas.onToolOutput({ id: '', name: 'Execute' }, 'lost');
    deltas.onToolInput({ id: 'call_3', name: '' }, 'lost');
    await deltas.close();
    expect(sent).toEqual([
      { step: 0, kind: 'thinking', text: 'Look first.' },
      { step: 0, kind: 'text', text: 'I will look.' },
      { step: 0, kind: 'tool_input', text: '{"command":"ls"}', toolUseId: 'call_1', toolName: 'Execute' },
      { step: 0, kind: 'tool_input', text: '{"file_path":"a"}', toolUseId: 'call_2', toolName: 'Read' },
      { step: 0, kind: 'tool_output', text: 'a\nb\n', toolUseId: 'call_1', toolName: 'Execute' },
      { step: 0, kind: 'tool_output', text: '1\tx\n', toolUseId: 'call_2', toolName: 'Read' },
      { step: 1, kind: 'text', text: 'Done.' },
    ]);
  });

  it('keeps the size threshold, the server limit and the backlog bound across kinds', async () => {
    const sent: Delta[] = [];
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const deltas = new DeltaPublisher(
      (delta) => {
        sent.push(delta);
        return gate;
      },
      { flushMs: 10_000, flushChars: 8 },
    );
    const call = { id: 'toolu_1', name: 'Execute' };
    deltas.onThinking('abcd');
    deltas.onToolOutput(call, 'efgh');
    // Eight characters of two kinds wait: sent at once, one request at a time.
    expect(sent).toEqual([{ step: 0, kind: 'thinking', text: 'abcd' }]);
    // Past the backlog while the server is slow, what waits is dropped, whatever its kind; what comes after is kept.
    for (let i = 0; i < 20; i++) deltas.onToolOutput(call, 'z'.repeat(DELTA_MAX_CHARS));
    deltas.onThinking('kept');
    open();
    await deltas.close();
    expect(sent.slice(1).map((delta) => [delta.kind, delta.text.length, delta.toolUseId])).toEqual([
      ['tool_output', 4, 'toolu_1'],
      // The first 17 of the 20 went past the backlog and were dropped; the last 3, coalesced, go in pieces of the server's limit.
      ['tool_output', DELTA_MAX_CHARS, 'toolu_1'],
      ['tool_output', DELTA_MAX_CHARS, 'toolu_1'],
      ['tool_output', DELTA_MAX_CHARS, 'toolu_1'],
      ['thinking', 4, undefined],
    ]);
  });

  it('counts the calls of a model it wraps, keeping the rest of the model', async () => {
    const deltas = new DeltaPublisher(async () => undefined);
    const model = { config: { model: 'm' }, complete: async (a: string) => `${a}!` };
    const counted = deltas.counting(model);
    expect(counted.config.model).toBe('m');
    expect(await counted.complete('x')).toBe('x!');
    await counted.complete('y');
    expect(deltas.step).toBe(1);
    await deltas.close();
  });
});

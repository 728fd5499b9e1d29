import { DELTA_MAX_CHARS, DeltaPublisher } from './delta-publisher';

const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

describe('DeltaPublisher', () => {
  it('coalesces text for the flush interval, and numbers the model calls of the turn', async () => {
    const sent: Array<[number, string]> = [];
    const deltas = new DeltaPublisher(async (step, text) => void sent.push([step, text]), { flushMs: 20 });
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
      (step, text) => {
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
      async (_step, text) => {
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

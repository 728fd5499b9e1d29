import { LOG_BATCH_CHARS, StepLog, workerRedactor } from './step-log';

describe('StepLog', () => {
  const collect = () => {
    const sent: string[] = [];
    const errors: unknown[] = [];
    return {
      sent,
      errors,
      log: (flushMs = 60_000) =>
        new StepLog(
          async (text) => void sent.push(text),
          (text) => text,
          (e) => errors.push(e),
          flushMs,
        ),
    };
  };

  it('sends lines gathered within the flush interval as one request, in order', async () => {
    const { sent, log } = collect();
    const stepLog = log(20);
    stepLog.add('one');
    stepLog.add('two');
    await new Promise((resolve) => setTimeout(resolve, 60));
    await stepLog.flush();
    expect(sent).toEqual(['one\ntwo']);
  });

  it('sends at once past a batch, never more than a batch per request', async () => {
    const { sent, log } = collect();
    const stepLog = log();
    const long = 'x'.repeat(LOG_BATCH_CHARS + 10);
    stepLog.add(long);
    await stepLog.flush();
    expect(sent.map((text) => text.length)).toEqual([LOG_BATCH_CHARS, 10]);
    expect(sent.join('')).toBe(long);
  });

  it('tells a failed send to onError and goes on with the next', async () => {
    const errors: unknown[] = [];
    const sent: string[] = [];
    let first = true;
    const stepLog = new StepLog(
      async (text) => {
        if (first) {
          first = false;
          throw new Error('409');
        }
        sent.push(text);
      },
      (text) => text,
      (error) => errors.push(error),
    );
    stepLog.add('lost');
    await stepLog.flush();
    stepLog.add('kept');
    await stepLog.flush();
    expect([errors.length, sent]).toEqual([1, ['kept']]);
  });
});

describe('workerRedactor', () => {
  const redact = workerRedactor(
    [
      ['/srv/worker/computers', '$COMPUTERS_DIR'],
      ['/srv/worker', '$WORKER_DATA_DIR'],
    ],
    'rack-2.lab.example',
  );

  it("replaces the worker's folders (the longest first) and host name where they start a path or a word", () => {
    expect(redact('Workspace ready at /srv/worker/computers/abc on rack-2.lab.example.')).toBe('Workspace ready at $COMPUTERS_DIR/abc on <worker-host>.');
    expect(redact('state in /srv/worker/worker.json')).toBe('state in $WORKER_DATA_DIR/worker.json');
  });

  it('leaves a longer path or a URL that merely contains them alone', () => {
    expect(redact('/srv/worker-2/x and https://example.com/srv/worker')).toBe('/srv/worker-2/x and https://example.com/srv/worker');
  });
});

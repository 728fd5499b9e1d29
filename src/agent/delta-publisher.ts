/** How often coalesced text is sent while the model writes. */
export const DELTA_FLUSH_MS = 100;
/** Text waiting past this many characters is sent at once. */
export const DELTA_FLUSH_CHARS = 2_048;
/** The most one delta may carry (the server's limit). */
export const DELTA_MAX_CHARS = 16_384;
/** Text past this while the server is slow is dropped: deltas are best effort, and memory stays bounded. */
const DELTA_BACKLOG_CHARS = 256 * 1024;

export type DeltaSender = (step: number, text: string) => Promise<void>;

/**
 * The text a model writes in a turn, sent on as `message.delta`: coalesced (every DELTA_FLUSH_MS or
 * DELTA_FLUSH_CHARS), one request at a time and in order, and best effort: `onText` never blocks
 * nor throws, and text that cannot be sent is dropped (the message the agent appends stays whole).
 * `step` numbers the model calls of the turn: `nextStep()` is called as each one starts.
 */
export class DeltaPublisher {
  private current = -1;
  /** Text not sent yet, by step, in order. */
  private pending: Array<{ step: number; text: string }> = [];
  private pendingChars = 0;
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> | null = null;
  /** No sends until then (Unix ms): the server asked to wait (429). */
  private quietUntil = 0;
  private closed = false;

  constructor(
    private readonly send: DeltaSender,
    private readonly options: { flushMs?: number; flushChars?: number; retryAfterOf?: (error: unknown) => number | null } = {},
  ) {}

  /** The model call under way (0 for the first). */
  get step(): number {
    return Math.max(this.current, 0);
  }

  /** A model call starts: the text of the one before is sent, and text from now on is of the next step. */
  nextStep(): void {
    this.flush();
    this.current++;
  }

  /**
   * The model, each of its calls starting a step, and its last text sent as soon as it answers (before
   * the agent appends the answer, mostly): so that the loop need not call `nextStep()` itself (if it
   * comes to, it should stop using this).
   */
  counting<Model extends { complete(...args: never[]): Promise<unknown> }>(model: Model): Model {
    const complete = model.complete.bind(model) as (...args: Parameters<Model['complete']>) => ReturnType<Model['complete']>;
    const counted = Object.create(model) as Model;
    counted.complete = ((...args: Parameters<Model['complete']>) => {
      this.nextStep();
      const answer = complete(...args);
      void answer.finally(() => this.flush()).catch(() => undefined);
      return answer;
    }) as Model['complete'];
    return counted;
  }

  /** For the model client: a piece of text as it arrives. */
  readonly onText = (delta: string): void => {
    if (this.closed || typeof delta !== 'string' || delta === '') return;
    const last = this.pending[this.pending.length - 1];
    if (last?.step === this.step) last.text += delta;
    else this.pending.push({ step: this.step, text: delta });
    this.pendingChars += delta.length;
    if (this.pendingChars > DELTA_BACKLOG_CHARS) this.drop();
    if (this.pendingChars >= (this.options.flushChars ?? DELTA_FLUSH_CHARS)) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.flushMs ?? DELTA_FLUSH_MS);
  };

  /** Sends what waits (not waiting for it); what arrives meanwhile goes in the next send. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.sending || this.pending.length === 0) return;
    const batch = this.pending;
    this.drop();
    if (Date.now() < this.quietUntil) return;
    this.sending = this.sendAll(batch).finally(() => {
      this.sending = null;
      if (this.pending.length > 0) this.flush();
    });
  }

  /** Sends what waits and stops; resolves when the last send has ended (it never rejects). */
  async close(): Promise<void> {
    this.flush();
    this.closed = true;
    while (this.sending) await this.sending;
    if (this.timer) clearTimeout(this.timer);
  }

  private drop(): void {
    this.pending = [];
    this.pendingChars = 0;
  }

  private async sendAll(batch: Array<{ step: number; text: string }>): Promise<void> {
    try {
      for (const { step, text } of batch) {
        for (let at = 0; at < text.length;) {
          let end = Math.min(text.length, at + DELTA_MAX_CHARS);
          // Not half a surrogate pair.
          if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1])) end--;
          await this.send(step, text.slice(at, end));
          at = end;
        }
      }
    } catch (error) {
      // The rest of the batch is dropped with it: a gap is better than text out of order or late.
      const wait = this.options.retryAfterOf?.(error);
      if (wait) this.quietUntil = Date.now() + wait;
    }
  }
}

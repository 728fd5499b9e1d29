import type { MessageDeltaRequest } from '../contract/agent-channel';

/** How often coalesced text is sent while the model writes. */
export const DELTA_FLUSH_MS = 100;
/** Text waiting past this many characters is sent at once. */
export const DELTA_FLUSH_CHARS = 2_048;
/** The most one delta may carry (the server's limit). */
export const DELTA_MAX_CHARS = 16_384;
/** Text past this while the server is slow is dropped: deltas are best effort, and memory stays bounded. */
const DELTA_BACKLOG_CHARS = 256 * 1024;

/** What a delta carries: the answer's text, the model's thinking, a tool call's arguments, or a running tool's output. */
export type DeltaKind = NonNullable<MessageDeltaRequest['kind']>;

/** A piece to send: `toolUseId` and `toolName` for the tool kinds only. */
export interface Delta {
  step: number;
  kind: DeltaKind;
  text: string;
  toolUseId?: string;
  toolName?: string;
}

export type DeltaSender = (delta: Delta) => Promise<void>;

/** The tool call a `tool_input` or `tool_output` piece belongs to. */
export interface DeltaTool {
  id: string;
  name: string;
}

/**
 * What a model writes in a turn (its answer, its thinking, its tool calls' arguments) and what its tools print,
 * sent on as `message.delta`: coalesced per (step, kind, tool call), every DELTA_FLUSH_MS or DELTA_FLUSH_CHARS, one
 * request at a time and in order, and best effort: the `on*` callbacks never block nor throw, and text that cannot be
 * sent is dropped (the messages the agent appends stay whole). `step` numbers the model calls of the turn:
 * `nextStep()` is called as each one starts; a tool's output is of the step whose answer called it.
 */
export class DeltaPublisher {
  private current = -1;
  /** Text not sent yet, one entry per (step, kind, tool call), in the order each began. */
  private pending: Delta[] = [];
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

  /** For the model client: a piece of the answer's text as it arrives. */
  readonly onText = (delta: string): void => this.add('text', delta);

  /** For the model client: a piece of the model's thinking (reasoning) as it arrives. */
  readonly onThinking = (delta: string): void => this.add('thinking', delta);

  /** For the model client: a piece of a tool call's arguments (JSON) as the model writes them. */
  readonly onToolInput = (call: DeltaTool, delta: string): void => this.add('tool_input', delta, call);

  /** For a running tool: a piece of its output as it comes. */
  readonly onToolOutput = (call: DeltaTool, delta: string): void => this.add('tool_output', delta, call);

  private add(kind: DeltaKind, text: string, tool?: DeltaTool): void {
    if (this.closed || typeof text !== 'string' || text === '') return;
    // A tool kind without its call's id and name is one the server would refuse: not sent.
    if ((kind === 'tool_input' || kind === 'tool_output') && !(tool?.id && tool.name)) return;
    const step = this.step;
    const same = this.pending.find((entry) => entry.step === step && entry.kind === kind && entry.toolUseId === tool?.id);
    if (same) same.text += text;
    else this.pending.push({ step, kind, text, ...(tool ? { toolUseId: tool.id, toolName: tool.name } : {}) });
    this.pendingChars += text.length;
    if (this.pendingChars > DELTA_BACKLOG_CHARS) this.drop();
    if (this.pendingChars >= (this.options.flushChars ?? DELTA_FLUSH_CHARS)) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.flushMs ?? DELTA_FLUSH_MS);
  }

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

  private async sendAll(batch: Delta[]): Promise<void> {
    try {
      for (const delta of batch) {
        const { text } = delta;
        for (let at = 0; at < text.length;) {
          let end = Math.min(text.length, at + DELTA_MAX_CHARS);
          // Not half a surrogate pair.
          if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1])) end--;
          await this.send({ ...delta, text: text.slice(at, end) });
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

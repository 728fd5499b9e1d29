/** How long a step's output waits before it is sent, and how much goes at once: the channel counts against a per-IP limit. */
export const LOG_FLUSH_MS = 1_000;
export const LOG_BATCH_CHARS = 32 * 1024;

/**
 * A step's output on its way to the server's provisioning log: lines gathered and sent together, at most every
 * `flushMs` or once `LOG_BATCH_CHARS` have gathered, one request at a time and in order. Each line is redacted as it comes.
 * A send that fails is told to `onError` (a 409 means the step is no longer this worker's) and its text dropped.
 */
export class StepLog {
  private pending: string[] = [];
  private pendingChars = 0;
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly send: (text: string) => Promise<void>,
    private readonly redact: (text: string) => string,
    private readonly onError: (error: unknown) => void,
    private readonly flushMs = LOG_FLUSH_MS,
  ) {}

  add(text: string): void {
    const line = this.redact(text);
    this.pending.push(line);
    this.pendingChars += line.length + 1;
    if (this.pendingChars >= LOG_BATCH_CHARS) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
  }

  /** Sends what has gathered; resolves once everything added so far has been sent (or failed). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const chunk of chunksOf(this.pending.join('\n'), LOG_BATCH_CHARS)) {
      this.sending = this.sending.then(() => this.send(chunk)).catch((error: unknown) => this.onError(error));
    }
    this.pending = [];
    this.pendingChars = 0;
    return this.sending;
  }
}

function chunksOf(text: string, size: number): string[] {
  const chunks: string[] = [];
  for (let at = 0; at < text.length; at += size) chunks.push(text.slice(at, at + size));
  return chunks;
}

/**
 * Takes the worker's own details out of text users see (a step's log and error): its folders become their names and its
 * host name `<worker-host>`, as the server does with its own. A path counts only where it starts one.
 */
export function workerRedactor(folders: Array<[path: string, name: string]>, host: string): (text: string) => string {
  const paths = folders
    .filter(([path]) => path.length > 1)
    .sort(([a], [b]) => b.length - a.length)
    .map(([path, name]): [RegExp, string] => [new RegExp(`(?<![\\w.~-])${escapeRegExp(path)}(?![\\w-]|\\.\\w)`, 'g'), name]);
  const hostPattern = host ? new RegExp(`(?<![\\w.-])${escapeRegExp(host)}(?![\\w-]|\\.\\w)`, 'gi') : null;
  return (text) => {
    let out = text;
    for (const [path, name] of paths) out = out.replace(path, name);
    return hostPattern ? out.replace(hostPattern, '<worker-host>') : out;
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

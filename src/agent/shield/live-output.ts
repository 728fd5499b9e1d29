import { redactSecrets } from './secrets';

/** The most text held back (an unfinished line, a private key's block): past it, that text is never shown live. */
const HELD_MAX_CHARS = 16 * 1024;
/** Text waiting for its scan: past it, more is dropped (live output is best effort; the stored result is whole). */
const QUEUED_MAX_CHARS = 64 * 1024;
const KEY_BEGIN = /-----BEGIN[ A-Z0-9]*PRIVATE KEY/g;
const KEY_END = /-----END[ A-Z0-9]*PRIVATE KEY/;

/**
 * A running tool's output for the session's viewers while Agent Shield is on: passed on only once scanned, with the
 * credentials redacted as they are from the stored result. It is scanned in whole lines (a credential cut in two
 * would not be found), and a private key's lines together, from its BEGIN line to its END line. What the scan cannot
 * read is withheld, as the shield fails closed; a line longer than HELD_MAX_CHARS is withheld from the live view
 * (the stored result has it). `write` never throws; `end` passes on the rest once the tool is done.
 */
export class ShieldedOutput {
  /** Text not released yet: the unfinished last line, or a private key's block waiting for its END. */
  private held = '';
  /** The rest of a line too long to hold is withheld, up to its newline. */
  private skipping = false;
  private queued = '';
  private scanning: Promise<void> | null = null;

  constructor(private readonly send: (text: string) => void) {}

  readonly write = (chunk: string): void => {
    if (this.skipping) {
      const newline = chunk.indexOf('\n');
      if (newline === -1) return;
      this.skipping = false;
      chunk = chunk.slice(newline + 1);
    }
    this.held += chunk;
    const cut = releasable(this.held);
    if (cut > 0) {
      this.release(this.held.slice(0, cut));
      this.held = this.held.slice(cut);
    }
    if (this.held.length > HELD_MAX_CHARS) {
      this.held = '';
      this.skipping = true;
    }
  };

  /** The tool is done: what is held goes too (a key without its END line is no key the scan would find in the result either). */
  async end(): Promise<void> {
    if (!this.skipping && this.held) this.release(this.held);
    this.held = '';
    this.skipping = false;
    while (this.scanning) await this.scanning;
  }

  private release(text: string): void {
    // Whole lines are dropped, never part of one: what follows is scanned as it would have been.
    if (this.queued.length + text.length > QUEUED_MAX_CHARS) return;
    this.queued += text;
    this.scanning ??= this.scan().finally(() => {
      this.scanning = null;
      if (this.queued) this.release('');
    });
  }

  private async scan(): Promise<void> {
    while (this.queued) {
      const text = this.queued;
      this.queued = '';
      try {
        this.send((await redactSecrets(text)).text);
      } catch {
        // Not scanned, not shown.
      }
    }
  }
}

/** How much of `text` may be scanned now: its whole lines, up to the BEGIN line of a private key whose END has not come. */
function releasable(text: string): number {
  const cut = text.lastIndexOf('\n') + 1;
  const lines = text.slice(0, cut);
  let begin = -1;
  for (const match of lines.matchAll(KEY_BEGIN)) begin = match.index;
  if (begin === -1 || KEY_END.test(lines.slice(begin))) return cut;
  return lines.lastIndexOf('\n', begin) + 1;
}

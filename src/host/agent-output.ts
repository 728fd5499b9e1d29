/** Agent tokens as they are shaped (`cpt_` and base64url), wherever they appear in an agent's output. */
const TOKEN_SHAPE = /cpt_[A-Za-z0-9_-]{16,}/g;

/** Longest line passed on whole; a longer one goes out in pieces. */
const MAX_LINE = 8 * 1024;
/** An agent token's length, and then some: a long line is never cut less than this after a `cpt_`. */
const TOKEN_ROOM = 128;

/** The text with the agent's token, and anything shaped like an agent token, masked. */
export function redactTokens(text: string, token: string): string {
  return (token ? text.split(token).join('[agent token]') : text).replace(TOKEN_SHAPE, 'cpt_[redacted]');
}

/**
 * Turns a child's output stream into lines for the server's log, each redacted. A chunk may end
 * mid-line (mid-token too): lines are only emitted whole, so a token is never split across two.
 */
export class OutputLines {
  private pending = '';

  constructor(
    private readonly redact: (text: string) => string,
    private readonly emit: (line: string) => void,
  ) {}

  push(chunk: string): void {
    this.pending += chunk;
    for (let newline = this.pending.indexOf('\n'); newline >= 0; newline = this.pending.indexOf('\n')) {
      this.line(this.pending.slice(0, newline));
      this.pending = this.pending.slice(newline + 1);
    }
    if (this.pending.length > MAX_LINE) {
      // Cut where no token can straddle the cut: before a `cpt_` that starts too close to it.
      let cut = this.pending.length - TOKEN_ROOM;
      const token = this.pending.lastIndexOf('cpt_', cut);
      if (token >= 0 && cut - token < TOKEN_ROOM) cut = token;
      this.line(this.pending.slice(0, cut));
      this.pending = this.pending.slice(cut);
    }
  }

  /** The stream ended: what is left is the last line. */
  end(): void {
    if (this.pending) this.line(this.pending);
    this.pending = '';
  }

  private line(text: string): void {
    const line = this.redact(text.replace(/\r$/, ''));
    if (line.trim()) this.emit(line);
  }
}

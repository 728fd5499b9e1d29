const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether JSON text nests arrays and objects deeper than `max` levels (`{}` is one level),
 * found by one scan of the text: strings are skipped with `indexOf`, so a body of base64
 * costs next to nothing, and nothing recurses. Malformed text is left to the parser.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i);
      if (i < 0) return false;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/** The index of the quote that ends the string opened at `open`, or -1 when it never ends. */
function closingQuote(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

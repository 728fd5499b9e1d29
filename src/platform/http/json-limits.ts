const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

/** A limit JSON text breaks: nesting deeper than `maxDepth`, or more than `maxValues` values. */
export type JsonLimit = 'depth' | 'values';

/**
 * Which limit JSON text breaks, if any, found by one scan of the text before it is parsed: strings are skipped with
 * `indexOf`, so a body of base64 costs next to nothing, and nothing recurses. Depth counts arrays and objects (`{}` is
 * one level); values are counted by their separators and containers (every comma and every opening bracket, at
 * every level), so parsing what passes costs at most what `maxValues` values cost, whatever the body's size.
 * Malformed text is left to the parser.
 */
export function jsonLimitBroken(text: string, maxDepth: number, maxValues = Infinity): JsonLimit | undefined {
  let depth = 0;
  let values = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i);
      if (i < 0) return undefined;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return 'depth';
      if (++values > maxValues) return 'values';
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    } else if (c === COMMA && ++values > maxValues) {
      return 'values';
    }
  }
  return undefined;
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

/**
 * The one URL checker: every URL the API stores goes through `checkUrl`, both as a JSON Schema
 * format (so the published `format` and the check are the same code) and where the value is
 * stored (which keeps the normalized form). WHATWG URL parsing alone is too forgiving for stored
 * data: it strips leading and trailing spaces, tabs and newlines, turns `\` into `/`, ignores extra
 * slashes (`http:///x` is `http://x/`), and percent-encodes `<` `>` `"` quietly. So the raw string
 * is checked first, then parsed, and the parser's output (`href`) is what gets stored.
 */

/** What one field accepts. */
export interface UrlRule {
  /** Allowed schemes, lower case, with the colon (`'https:'`); `'*'` for any. */
  schemes: readonly string[] | '*';
  maxLength: number;
  /**
   * `user:password@` in an http(s) URL, or a password in any URL: refused (`'refuse'`), or
   * removed from the stored form (`'drop'`). A user name alone is fine for ssh and git (`git@host`).
   */
  credentials: 'refuse' | 'drop';
  /** Whether a query (`?…`) and a fragment (`#…`) are allowed. */
  query: boolean;
  fragment: boolean;
}

export type UrlVerdict = { ok: true; href: string } | { ok: false; message: string };

/**
 * Whitespace (Unicode's included: U+00A0, U+2028, U+3000…), control characters, invisible format
 * characters (zero-width spaces, bidirectional overrides, U+FEFF) and unpaired surrogates.
 */
export const URL_UNSAFE_CHARACTERS = /[\s\p{Cc}\p{Cf}\p{Cs}\p{Z}]/u;
/**
 * Characters RFC 3986 does not allow unencoded (`<>"{}|\^` and backquote), which WHATWG parsing
 * would percent-encode or rewrite without a word, plus `'`, which RFC 3986 allows but which closes
 * an HTML attribute or a shell word wherever a stored URL is shown or used. Refused rather than
 * encoded, so what is stored is what the caller sent, up to normalization.
 */
export const URL_HTML_CHARACTERS = /[<>"'{}|\\^`]/;
const BAD_PERCENT = /%(?![0-9A-Fa-f]{2})/;
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;
const WEB = new Set(['http:', 'https:']);
/** Schemes whose hosts WHATWG parses as domains (lower case, IDNA); other hosts are kept as written. */
const SPECIAL = new Set(['http:', 'https:', 'ws:', 'wss:', 'ftp:', 'file:']);

function refuse(message: string): UrlVerdict {
  return { ok: false, message };
}

function schemesText(schemes: readonly string[]): string {
  const names = schemes.map((scheme) => scheme.slice(0, -1));
  return names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`;
}

/** Checks `raw` against `rule`; when it passes, `href` is its normalized form, the one to store. */
export function checkUrl(raw: string, rule: UrlRule): UrlVerdict {
  if (raw.length > rule.maxLength) return refuse(`must be at most ${rule.maxLength} characters`);
  if (URL_UNSAFE_CHARACTERS.test(raw)) return refuse('must not contain whitespace, control or invisible characters (percent-encode them)');
  if (URL_HTML_CHARACTERS.test(raw)) return refuse('must not contain any of < > " \' { } | \\ ^ ` (percent-encode them)');
  if (BAD_PERCENT.test(raw)) return refuse('must follow every % with two hexadecimal digits');
  const named = SCHEME.exec(raw);
  const scheme = named ? `${named[1].toLowerCase()}:` : undefined;
  const expected = rule.schemes === '*' ? 'scheme://host/…' : `${schemesText(rule.schemes)} URL (scheme://host/…)`;
  if (scheme === undefined) return refuse(`must be an absolute ${expected}`);
  if (rule.schemes !== '*' && !rule.schemes.includes(scheme)) return refuse(`must be an ${expected}; ${scheme} is not accepted`);
  const authority = raw.slice(named![0].length);
  if (!authority.startsWith('//')) return refuse(`must be an absolute ${expected}, with // after the scheme`);
  const file = scheme === 'file:';
  // WHATWG skips any number of slashes after `http:`, so `http:///x` would name the host `x`.
  if (!file && (authority.length === 2 || /^[/?#]/.test(authority.slice(2)))) return refuse('must name a host after //');
  if (!rule.query && raw.split('#')[0].includes('?')) return refuse('must not have a query (?…)');
  if (!rule.fragment && raw.includes('#')) return refuse('must not have a fragment (#…)');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse(`is not a valid URL (WHATWG URL parsing refuses it)`);
  }
  if (!file && url.hostname === '') return refuse('must name a host after //');
  if (url.hostname.startsWith('-') || url.username.startsWith('-'))
    return refuse('must not have a host or user name starting with "-" (git would read it as an option)');
  const web = WEB.has(scheme);
  if (url.password !== '' || (web && url.username !== '')) {
    if (rule.credentials === 'refuse') return refuse('must not contain credentials (user:password@): they would be stored and shown to every reader');
    url.password = '';
    if (web) url.username = '';
  }
  if (!SPECIAL.has(scheme) && url.hostname !== url.hostname.toLowerCase()) url.hostname = url.hostname.toLowerCase();
  const href = url.href;
  if (href.length > rule.maxLength) return refuse(`must be at most ${rule.maxLength} characters once normalized (${href.length})`);
  // WHATWG output is ASCII and encoded; these hold unless the parser surprises us, in which case refuse.
  if (URL_UNSAFE_CHARACTERS.test(href) || URL_HTML_CHARACTERS.test(href) || new URL(href).href !== href) {
    return refuse('has no stable normalized form');
  }
  return { ok: true, href };
}

/** Custom models' `baseUrl` and the `allowedBaseUrls` it is compared with: an endpoint the server calls. */
// A query is kept: some vendors need one on every call (Azure OpenAI's `?api-version=`); the relay adds its path before it.
export const HTTP_BASE_URL: UrlRule = { schemes: ['https:', 'http:'], maxLength: 2048, credentials: 'refuse', query: true, fragment: false };

/** The JSON Schema formats built on `checkUrl`, by name: how a value is checked and what the format is called in messages. */
export interface UrlFormat {
  /** Why the value is refused, or undefined when it passes. */
  problem(value: string): string | undefined;
  /** For messages: "must be <name>". */
  name: string;
}

export function urlFormat(rule: UrlRule, name: string): UrlFormat {
  return {
    name,
    problem: (value) => {
      const verdict = checkUrl(value, rule);
      return verdict.ok ? undefined : verdict.message;
    },
  };
}

/**
 * `uri`: any scheme, with a host (or `file:`), and the character rules above; what responses
 * publish. `http-base-url`: http or https, no credentials or fragment (the server appends paths such
 * as `/chat/completions` to its path, before its query).
 */
export const URL_FORMATS: Record<string, UrlFormat> = {
  uri: urlFormat({ schemes: '*', maxLength: 8192, credentials: 'refuse', query: true, fragment: true }, 'an absolute URL'),
  'http-base-url': urlFormat(HTTP_BASE_URL, 'an http or https URL without credentials or fragment'),
};

/**
 * Sizes the spec leaves open ("maximum size of message text, attachments: not shown"), decided
 * here. A whole request is also bounded by BODY_LIMIT_BYTES (413).
 */
export const ATTACHMENT_LIMITS = {
  /** Characters of add-message `text`. */
  textChars: 200_000,
  images: 20,
  files: 20,
  /** Base64 characters of one image: about 5 MiB of bytes. */
  imageBase64Chars: 7_000_000,
  /** Base64 characters of one PDF: about 10 MiB of bytes. */
  pdfBase64Chars: 14_000_000,
  /** Characters of one text file. */
  textFileChars: 2_000_000,
  blocksPerMessage: 500,
} as const;

/** A hook message's lists (the spec sets no size): more commands than one hook event runs in any agent we know. */
export const HOOK_LIMITS = {
  commandsPerMessage: 100,
} as const;

/**
 * The spec's eight signature providers (vendors anonymised as the spec does), `unknown`, and `anthropic` (not in the
 * spec): the reference agent's signatures from an Anthropic Messages model, which it sends back to that API.
 */
export const THINKING_SIGNATURE_PROVIDERS = [
  'vendor-a',
  'vendor-b',
  'vendor-c',
  'vendor-d',
  'vendor-e',
  'vendor-f',
  'agent-platform',
  'generic-chat-completion-api',
  'unknown',
  'anthropic',
] as const;

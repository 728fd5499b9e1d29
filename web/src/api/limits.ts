/**
 * What the server accepts in one added message. The API does not publish these figures (no endpoint answers them):
 * they are the documented defaults (docs/api.md, "Limits"; the server's ATTACHMENT_LIMITS and MESSAGE_BODY_LIMIT_BYTES),
 * kept here in one place. The server stays the judge: an operator may lower the body limit, and the console then
 * shows the server's 413 in its own words.
 */
export const MESSAGE_LIMITS = {
  textChars: 200_000,
  images: 20,
  imageBytes: 5 * 1024 * 1024,
  imageBase64Chars: 7_000_000,
  files: 20,
  pdfBytes: 10 * 1024 * 1024,
  pdfBase64Chars: 14_000_000,
  textFileChars: 2_000_000,
  /** MESSAGE_BODY_LIMIT_BYTES's default: the whole request, base64 included. */
  bodyBytes: 32 * 1024 * 1024,
  imageTypes: ['image/jpeg', 'image/png', 'image/gif', 'image/webp'],
} as const;

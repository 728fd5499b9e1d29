/**
 * How a custom model's `apiKey` appears in every answer: `****` and, for keys long enough that
 * it gives nothing away, their last four characters. Sending the masked value back in a change
 * keeps the stored key.
 */
export function maskApiKey(key: string): string {
  return key.length >= 12 ? `****${key.slice(-4)}` : '****';
}

/** Whether a value has the form of a masked key (so it cannot be a new key). */
export function looksMasked(value: string): boolean {
  return /^\*{4}[^*]{0,4}$/.test(value);
}

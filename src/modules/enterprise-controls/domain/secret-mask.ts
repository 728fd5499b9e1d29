/**
 * How a secret (a custom model's `apiKey`, an `extraHeaders` value, a credential of its
 * `cloudModelConfig`) appears in every answer: `****` and, for values long enough that it gives
 * nothing away, their last four characters. Sending the masked value back in a change keeps the
 * stored value.
 */
export function maskSecret(value: string): string {
  return value.length >= 12 ? `****${value.slice(-4)}` : '****';
}

/** Whether a value has the form of a masked secret (so it cannot be a new one). */
export function looksMasked(value: string): boolean {
  return /^\*{4}[^*]{0,4}$/.test(value);
}

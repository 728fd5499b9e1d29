import { setTimeout as sleep } from 'node:timers/promises';
import type { components } from './generated/openapi';

/** What the server's v0 API answers when it refuses (4xx): `metadata.code` says why, for programs. */
type V0Error = components['schemas']['V0ErrorSchema'];

/** An answer the server gave on purpose (4xx, 500): retrying would not change it. */
export class ChannelRefusal extends Error {
  /** The body as it came: the channel's error body, unless something between the two (a proxy) answered instead. */
  constructor(
    readonly status: number,
    readonly body: Partial<V0Error>,
  ) {
    super(`${status}: ${body.detail ?? 'refused'}`);
  }

  get code(): string | undefined {
    return this.body.metadata?.code;
  }
}

export interface RetryingRequest {
  method: string;
  /** The whole URL; `path` names the call in log lines. */
  url: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** How long the request is retried on network errors, 429, 502, 503 and 504; 0: one attempt. */
  retryWindowMs: number;
  log?: (line: string) => void;
}

/** The longest wait between two attempts, Retry-After included. */
const MAX_DELAY_MS = 5_000;
/** Answers that say "not now" rather than "no": the request is tried again. */
const TRANSIENT = new Set([429, 502, 503, 504]);
/** One attempt's limit: a server that accepted the connection and says nothing is tried again. */
const ATTEMPT_TIMEOUT_MS = 60_000;

/**
 * A request to the platform, tried again while the server is restarting or busy (network errors, 429, 502, 503, 504)
 * until `retryWindowMs` is spent, with the same headers each time (so an Idempotency-Key holds across retries). Resolves
 * to the answer's JSON (null when empty), typed as the caller's contract says: the programs trust the server they
 * were given. A 4xx or a 500 is a ChannelRefusal at once.
 */
export async function retryingRequest<Answer>(request: RetryingRequest): Promise<Answer> {
  const { method, path, signal, log } = request;
  let lastError: unknown;
  const giveUpAt = Date.now() + request.retryWindowMs;
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    let retryAfter: number | null = null;
    try {
      const res = await fetch(request.url, {
        method,
        headers: request.headers,
        body: request.body,
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]) : AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      const text = await res.text();
      if (res.ok) return (text ? JSON.parse(text) : null) as Answer;
      // A 502, 503 or 504 often comes from something in between (a proxy's error page), not as JSON.
      if (!TRANSIENT.has(res.status)) throw new ChannelRefusal(res.status, (jsonOrNull(text) ?? {}) as ChannelRefusal['body']);
      lastError = new Error(`${method} ${path}: ${res.status}`);
      retryAfter = retryAfterMs(res.headers.get('retry-after')) ?? null;
    } catch (error) {
      if (error instanceof ChannelRefusal || signal?.aborted) throw error;
      lastError = error;
    }
    // Bounded exponential backoff: 0.25 s, 0.5 s, 1 s ... up to 5 s between attempts, or what Retry-After asks (at most 5 s).
    const delay = Math.min(MAX_DELAY_MS, retryAfter ?? 250 * 2 ** Math.min(attempt - 1, 10));
    if (Date.now() + delay > giveUpAt) break;
    log?.(`${method} ${path} failed (${describe(lastError)}); attempt ${attempt}, retrying in ${delay} ms`);
    await sleep(delay, undefined, signal ? { signal } : undefined).catch(() => undefined);
  }
  throw lastError instanceof Error ? lastError : new Error(String(lastError));
}

/** `Retry-After` as milliseconds: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const value = header.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function jsonOrNull(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : null;
  } catch {
    return null;
  }
}

/** An error as a log line says it: a network error's cause (ECONNREFUSED...) rather than fetch's "fetch failed". */
export function describe(error: unknown): string {
  if (error instanceof Error) return (error.cause as Error | undefined)?.message ?? error.message;
  return String(error);
}

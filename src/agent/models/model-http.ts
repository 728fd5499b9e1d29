import { ModelError, RETRYABLE_STATUSES } from './model-api';
import { retryAfterMs } from './retry';
import { serverSentEvents, ServerSentEvent } from './server-sent-events';

/** A call gets this long in all when the turn gives it no signal of its own. */
const DEFAULT_TIMEOUT_MS = 600_000;

/**
 * How a request proves who sends it when no API key does: headers made for the request (a signature,
 * a token), and a way to renew what they are made from when the vendor refuses them.
 */
export interface RequestAuth {
  headers(url: string, body: string): Promise<Record<string, string>>;
  renew(): Promise<void>;
}

/**
 * POSTs a model request and returns the vendor's successful answer, unread. A network error, or an
 * error status, is a ModelError that says whether trying again may help (429, 5xx, the network) and
 * what `Retry-After` asked for. With `auth`, a 401 or 403 renews the credentials and tries once more.
 */
export async function postModel(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal | undefined,
  auth?: RequestAuth,
): Promise<Response> {
  const where = new URL(url).origin;
  const text = JSON.stringify(body);
  const send = async () =>
    fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream, application/json',
        ...headers,
        ...(auth ? await auth.headers(url, text) : {}),
      },
      body: text,
      signal: signal ?? AbortSignal.timeout(DEFAULT_TIMEOUT_MS),
    }).catch((error: Error) => {
      if (signal?.aborted) throw error;
      throw new ModelError(`the model at ${where} could not be reached: ${(error.cause as Error | undefined)?.message ?? error.message}`, { retryable: true });
    });
  let res = await send();
  if (auth && (res.status === 401 || res.status === 403)) {
    await res.body?.cancel();
    await auth.renew();
    res = await send();
  }
  if (res.ok) return res;
  const answer = await res.text().catch(() => '');
  throw new ModelError(`the model at ${where} answered ${res.status}: ${answer.slice(0, 500)}`, {
    status: res.status,
    retryable: RETRYABLE_STATUSES.has(res.status),
    retryAfterMs: retryAfterMs(res.headers.get('retry-after')),
  });
}

/** Whether the vendor streamed its answer; one that answered JSON to a streaming request is read as a whole answer. */
export function isEventStream(res: Response): boolean {
  return /^text\/event-stream\b/i.test(res.headers.get('content-type') ?? '');
}

/** The answer's body as JSON, or a ModelError saying it is not. */
export async function jsonBody<T>(res: Response): Promise<T> {
  const where = new URL(res.url || 'http://model').origin;
  const text = await res.text().catch((error: Error) => {
    throw new ModelError(`the model at ${where} stopped answering: ${(error.cause as Error | undefined)?.message ?? error.message}`, { retryable: true });
  });
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ModelError(`the model at ${where} answered something that is not JSON: ${text.slice(0, 200)}`);
  }
}

/**
 * The answer's events, each given to `take`. A stream that breaks before `started()` is true (nothing
 * of the answer passed on yet) may be tried again; after, it is an error of the answer.
 */
export async function readEvents(res: Response, take: (event: ServerSentEvent) => void, started: () => boolean, signal?: AbortSignal): Promise<void> {
  const where = new URL(res.url || 'http://model').origin;
  if (!res.body) throw new ModelError(`the model at ${where} answered an empty stream`);
  try {
    for await (const event of serverSentEvents(res.body)) take(event);
  } catch (error) {
    if (error instanceof ModelError || signal?.aborted) throw error;
    const cause = (error as Error).cause as Error | undefined;
    throw new ModelError(`the model at ${where} broke off its answer: ${cause?.message ?? (error as Error).message}`, { retryable: !started() });
  }
}

/** Parses one event's JSON data, or a ModelError naming the stream as malformed. */
export function eventJson<T>(event: ServerSentEvent, where: string): T {
  try {
    return JSON.parse(event.data) as T;
  } catch {
    throw new ModelError(`the model at ${where} streamed an event that is not JSON: ${event.data.slice(0, 200)}`);
  }
}

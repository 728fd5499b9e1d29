import { useEffect, useRef, useState } from 'react';
import { api, type Schemas } from './client';

/** One event of the organization's log, as the API's `Event` schema (a union on `type`). */
export type PlatformEvent = Schemas['Event'];
export type EventType = PlatformEvent['type'];

/** `connecting` until the stream answers, `live` while it is open, `reconnecting` after it dropped, `stopped` when the API refused it. */
export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'stopped';

interface Message {
  id?: string;
  event?: string;
  data: string;
  retry?: number;
}

/**
 * A server-sent events parser (the WHATWG rules: lines end in CR, LF or CRLF; a blank line dispatches; `:` starts a
 * comment; `data` lines join with LF). Fed decoded text chunks, it yields each complete message.
 */
export class SseParser {
  private buffer = '';
  private pending: Message = { data: '' };
  private hasData = false;

  push(chunk: string): Message[] {
    this.buffer += chunk;
    const messages: Message[] = [];
    for (;;) {
      const end = this.buffer.search(/\r\n|\r|\n/);
      if (end < 0) break;
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (this.buffer[end] === '\r' && end === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + (this.buffer.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (this.hasData) messages.push(this.pending);
        this.pending = { data: '' };
        this.hasData = false;
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') {
        this.pending.data = this.hasData ? `${this.pending.data}\n${value}` : value;
        this.hasData = true;
      } else if (field === 'event') this.pending.event = value;
      else if (field === 'id' && !value.includes('\0')) this.pending.id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) this.pending.retry = Number(value);
    }
    return messages;
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/**
 * Follows the organization's event stream (`GET /api/v0/events`, `Accept: text/event-stream`) until `signal` aborts.
 * Read with fetch, not EventSource, because EventSource cannot send the `Authorization` header and the key must never
 * be in a URL. Reconnects after a drop with `Last-Event-ID` (the server replays what was missed, in order); when that
 * point has expired (410) it starts afresh and calls `onGap`. `onOpen` is called once the stream answers, so the
 * caller can read the objects it shows again: anything that changed before the stream began is then not missed.
 */
export async function followEvents(
  types: readonly EventType[],
  handlers: { onEvent: (event: PlatformEvent) => void; onOpen?: () => void; onGap?: () => void; onState?: (state: StreamState) => void },
  signal: AbortSignal,
): Promise<void> {
  let lastId: string | undefined;
  let retryMs = 2000;
  handlers.onState?.('connecting');
  while (!signal.aborted) {
    try {
      const { response } = await api.GET('/api/v0/events', {
        params: { query: { types: types.join(',') }, ...(lastId ? { header: { 'Last-Event-ID': lastId } } : {}) },
        headers: { Accept: 'text/event-stream' },
        parseAs: 'stream',
        signal,
      });
      if (response.status === 410) {
        // Our resume point is older than the log keeps: start from now, and let the caller reload what it shows.
        lastId = undefined;
        handlers.onGap?.();
        continue;
      }
      if (response.status === 429) {
        await sleep(Number(response.headers.get('retry-after') ?? 5) * 1000, signal);
        continue;
      }
      if (!response.ok || !response.body) {
        // 401/403/400: asking again would answer the same. The page's own queries say why.
        handlers.onState?.('stopped');
        return;
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      const parser = new SseParser();
      let opened = false;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (!opened) {
          opened = true;
          handlers.onState?.('live');
          handlers.onOpen?.();
        }
        for (const message of parser.push(value)) {
          if (message.retry !== undefined) retryMs = message.retry;
          if (message.id !== undefined) lastId = message.id;
          if (!message.event || !message.data) continue;
          try {
            handlers.onEvent(JSON.parse(message.data) as PlatformEvent);
          } catch {
            // A message that is not an Event: ignored, as clients ignore what they do not know.
          }
        }
      }
    } catch {
      if (signal.aborted) return;
    }
    if (signal.aborted) return;
    handlers.onState?.('reconnecting');
    await sleep(retryMs, signal);
  }
}

/**
 * A component's subscription to the event stream: calls `onEvent` for each event of `types`, and `onSync` when the
 * stream (re)opens or lost events, when what is shown should be read again. Answers the stream's state.
 */
export function useEventStream(types: readonly EventType[], onEvent: (event: PlatformEvent) => void, onSync: () => void): StreamState {
  const [state, setState] = useState<StreamState>('connecting');
  const latest = useRef({ onEvent, onSync });
  latest.current = { onEvent, onSync };
  const key = types.join(',');
  useEffect(() => {
    const controller = new AbortController();
    void followEvents(
      key.split(',') as EventType[],
      {
        onEvent: (event) => latest.current.onEvent(event),
        onOpen: () => latest.current.onSync(),
        onGap: () => latest.current.onSync(),
        onState: (next) => {
          setState(next);
          // Refused (a key revoked, say): reading what is shown again makes the page say why (a 401 signs the tab out).
          if (next === 'stopped') latest.current.onSync();
        },
      },
      controller.signal,
    );
    return () => controller.abort();
  }, [key]);
  return state;
}

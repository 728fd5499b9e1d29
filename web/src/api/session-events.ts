import { createParser } from 'eventsource-parser';
import { useEffect, useRef, useState } from 'react';
import { authorizationHeader, problemFrom, type ApiProblem, type Schemas } from '../api/client';

/** One numbered event of the stream (schema `Event`): only what the session view reads. */
export interface StreamEvent {
  id: string;
  seq: number;
  type: string;
  sessionId: string | null;
  data: Record<string, unknown>;
}

export type LiveState =
  { status: 'connecting' } | { status: 'live' } | { status: 'reconnecting'; error?: ApiProblem } | { status: 'stopped'; error: ApiProblem };

/** A piece of the text a model is writing (schema `MessageDeltaEvent`'s `data`): live only, never numbered or stored. */
export type MessageDelta = Schemas['MessageDeltaEvent']['data'];

interface Handlers {
  onEvent(event: StreamEvent): void;
  /**
   * `message.delta`, apart from `onEvent`: several a second while a model writes, and never a reason to read anything
   * again (the stored message follows as `message.added`).
   */
  onDelta(delta: MessageDelta): void;
  /** The stream (re)started without a resume point: what is shown may have missed events, reload it. */
  onFresh(): void;
  /** The stream dropped: numbered events sent meanwhile are replayed on resume, deltas are lost. */
  onDropped(): void;
}

/**
 * Follows `GET /api/v0/sessions/{sessionId}/events` (server-sent events) with fetch, since EventSource cannot send the
 * Authorization header. After a drop it reconnects after the server's `retry` with `Last-Event-ID`, so nothing is
 * missed or repeated; a resume point the server no longer keeps (410) starts afresh and reloads.
 */
export function useSessionEvents(sessionId: string, handlers: Handlers): LiveState {
  const [state, setState] = useState<LiveState>({ status: 'connecting' });
  const latest = useRef(handlers);
  latest.current = handlers;
  useEffect(() => {
    const abort = new AbortController();
    void follow(sessionId, abort.signal, {
      onEvent: (event) => latest.current.onEvent(event),
      onDelta: (delta) => latest.current.onDelta(delta),
      onFresh: () => latest.current.onFresh(),
      onDropped: () => latest.current.onDropped(),
      onState: (next) => setState(next),
    });
    return () => abort.abort();
  }, [sessionId]);
  return state;
}

async function follow(sessionId: string, signal: AbortSignal, handlers: Handlers & { onState(state: LiveState): void }): Promise<void> {
  let lastId: string | undefined;
  let retryMs = 2_000;
  while (!signal.aborted) {
    try {
      const response = await fetch(`/api/v0/sessions/${encodeURIComponent(sessionId)}/events`, {
        headers: { Accept: 'text/event-stream', ...authorizationHeader(), ...(lastId ? { 'Last-Event-ID': lastId } : {}) },
        signal,
        cache: 'no-store',
      });
      if (response.status === 410) {
        lastId = undefined;
        continue;
      }
      if (!response.ok || !response.body) {
        const problem = await problemFrom(response);
        // Not found, not allowed, not signed in: retrying answers the same.
        if (response.status < 500 && response.status !== 429) {
          handlers.onState({ status: 'stopped', error: problem });
          if (response.status === 401) handlers.onFresh();
          return;
        }
        throw problem;
      }
      handlers.onState({ status: 'live' });
      if (lastId === undefined) handlers.onFresh();
      const parser = createParser({
        onEvent: (message) => {
          // Deltas come without an id: the resume point stays the last numbered event's.
          if (message.id) lastId = message.id;
          try {
            const event = JSON.parse(message.data) as StreamEvent | Schemas['MessageDeltaEvent'];
            if (event.type === 'message.delta') handlers.onDelta((event as Schemas['MessageDeltaEvent']).data);
            else handlers.onEvent(event as StreamEvent);
          } catch {
            // Not JSON: not an event of ours.
          }
        },
        onRetry: (ms) => {
          retryMs = ms;
        },
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
      handlers.onDropped();
      handlers.onState({ status: 'reconnecting' });
    } catch (error) {
      if (signal.aborted) return;
      handlers.onDropped();
      handlers.onState({ status: 'reconnecting', error: error instanceof Error && 'status' in error ? (error as ApiProblem) : undefined });
    }
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
}

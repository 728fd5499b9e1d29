import http from 'node:http';

/** One server-sent event as the wire carried it. */
export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
}

export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The events so far, in arrival order. */
  events: SseEvent[];
  /** Comment lines so far (without the colon). */
  comments: string[];
  /** The body, when the answer was not a stream (an error). */
  body(): unknown;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  /** Waits until `done` holds for what has arrived, or fails after `ms`. */
  until(done: (stream: SseStream) => boolean, what: string, ms?: number): Promise<void>;
  close(): void;
}

/**
 * A real SSE client over HTTP: parses the wire format (fields `id`, `event`, `data`, `retry`,
 * comment lines, blank-line dispatch, CRLF or LF) as it arrives, as EventSource does.
 */
export function openStream(baseUrl: string, path: string, headers: Record<string, string>): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const request = http.get(new URL(path, baseUrl), { agent: false, headers: { accept: 'text/event-stream', ...headers } }, (response) => {
      response.setEncoding('utf8');
      let buffer = '';
      let raw = '';
      let current: { id?: string; event?: string; data: string[] } = { data: [] };
      let endResolve: () => void;
      const ended = new Promise<void>((r) => (endResolve = r));
      const waiters = new Set<() => void>();
      const stream: SseStream = {
        status: response.statusCode ?? 0,
        headers: response.headers,
        events: [],
        comments: [],
        body: () => (raw ? JSON.parse(raw) : undefined),
        ended,
        until: (done, what, ms = 10_000) =>
          new Promise<void>((ok, fail) => {
            if (done(stream)) return ok();
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(new Error(`Timed out waiting for ${what}: ${stream.events.length} events so far`));
            }, ms);
            const check = () => {
              if (!done(stream)) return;
              clearTimeout(timer);
              waiters.delete(check);
              ok();
            };
            waiters.add(check);
          }),
        close: () => request.destroy(),
      };
      const isStream = String(response.headers['content-type'] ?? '').startsWith('text/event-stream');
      response.on('data', (chunk: string) => {
        if (!isStream) {
          raw += chunk;
          return;
        }
        buffer += chunk;
        let newline: number;
        while ((newline = buffer.search(/\r\n|\n|\r/)) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
          if (line === '') {
            if (current.data.length > 0 || current.event !== undefined) {
              stream.events.push({
                ...(current.id !== undefined ? { id: current.id } : {}),
                ...(current.event !== undefined ? { event: current.event } : {}),
                data: current.data.join('\n'),
              });
            }
            current = { data: [] };
            continue;
          }
          if (line.startsWith(':')) {
            stream.comments.push(line.slice(1).trim());
            continue;
          }
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') current.data.push(value);
          else if (field === 'id') current.id = value;
          else if (field === 'event') current.event = value;
        }
        for (const waiter of [...waiters]) waiter();
      });
      const finish = () => {
        endResolve();
        for (const waiter of [...waiters]) waiter();
      };
      response.on('end', finish);
      response.on('close', finish);
      response.on('error', finish);
      resolve(stream);
    });
    request.on('error', reject);
  });
}

/** The parsed `data` of each event. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the JSON the wire carried
export function payloads<T = Record<string, any>>(stream: SseStream): T[] {
  return stream.events.map((event) => JSON.parse(event.data) as T);
}

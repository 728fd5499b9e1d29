import { createParser } from 'eventsource-parser';

/** One event of a `text/event-stream`: its `event` name (`message` when unnamed) and its data lines joined. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * The events of a `text/event-stream` body as they arrive, parsed by eventsource-parser (the console's
 * parser too). An event the stream ends in the middle of is still given, so a cut shows up as its
 * truncated data rather than as nothing.
 */
export async function* serverSentEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let parsed: ServerSentEvent[] = [];
  const parser = createParser({ onEvent: (message) => parsed.push({ event: message.event ?? 'message', data: message.data }) });
  const drain = function* () {
    const ready = parsed;
    parsed = [];
    yield* ready;
  };
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    yield* drain();
  }
  // The end of the body ends the line and the event under way (a stream that ended cleanly holds none).
  parser.feed(`${decoder.decode()}\n\n`);
  yield* drain();
}

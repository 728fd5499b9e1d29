/** One event of a `text/event-stream`: its `event` name (`message` when unnamed) and its data lines joined. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * The events of a `text/event-stream` body as they arrive (the WHATWG parsing rules: lines end with
 * CRLF, LF or CR; `data` lines join with LF; comments and unknown fields are ignored; a blank line
 * ends an event). An event the stream ends in the middle of is still given, so a cut shows up as
 * its truncated data rather than as nothing.
 */
export async function* serverSentEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  const take = (line: string): ServerSentEvent | null => {
    if (line === '') {
      const complete = data.length > 0 ? { event: event || 'message', data: data.join('\n') } : null;
      event = '';
      data = [];
      return complete;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    return null;
  };
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (;;) {
      const end = buffer.search(/\r\n|\n|\r/);
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (end === -1 || (buffer[end] === '\r' && end === buffer.length - 1)) break;
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
      const complete = take(line);
      if (complete) yield complete;
    }
  }
  buffer += decoder.decode();
  for (const line of buffer.split(/\r\n|\n|\r/)) {
    const complete = take(line);
    if (complete) yield complete;
  }
  const last = take('');
  if (last) yield last;
}

import { serverSentEvents, ServerSentEvent } from './server-sent-events';

async function parse(...chunks: string[]): Promise<ServerSentEvent[]> {
  async function* body() {
    for (const chunk of chunks) yield new TextEncoder().encode(chunk);
  }
  const events: ServerSentEvent[] = [];
  for await (const event of serverSentEvents(body())) events.push(event);
  return events;
}

describe('serverSentEvents', () => {
  it('gives named and unnamed events, joining data lines and skipping comments', async () => {
    expect(await parse(': ping\n\nevent: message_start\ndata: {"a":1}\n\ndata: one\ndata: two\n\n')).toEqual([
      { event: 'message_start', data: '{"a":1}' },
      { event: 'message', data: 'one\ntwo' },
    ]);
  });

  it('reads events split anywhere across chunks, with CRLF, LF or CR line ends', async () => {
    expect(await parse('data: {"x"', ':1}\r', '\n\r\nevent: e\rdata:no-space\r\r', 'data: é'.slice(0, 7), 'é\n\n')).toEqual([
      { event: 'message', data: '{"x":1}' },
      { event: 'e', data: 'no-space' },
      { event: 'message', data: 'éé' },
    ]);
  });

  it('gives the event a stream ends in the middle of, so a cut shows', async () => {
    expect(await parse('data: {"a":1}\n\ndata: {"b":')).toEqual([
      { event: 'message', data: '{"a":1}' },
      { event: 'message', data: '{"b":' },
    ]);
  });
});

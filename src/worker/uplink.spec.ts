import { once } from 'node:events';
import { createServer, IncomingMessage, request, Server, ServerResponse } from 'node:http';
import { AddressInfo, connect, createServer as createNetServer } from 'node:net';
import { uplink } from './uplink';

/** What the upstream (standing for the platform's server) was asked. */
interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

describe('The uplink (a computer to the agent channel, through its worker)', () => {
  let upstream: Server;
  let front: Server;
  let frontPort: number;
  let upstreamPort: number;
  const seen: Seen[] = [];
  let answer: (req: IncomingMessage, res: ServerResponse) => void;

  beforeAll(async () => {
    upstream = createServer((req, res) => answer(req, res));
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    upstreamPort = (upstream.address() as AddressInfo).port;
    // The server's base URL with a path, as behind a reverse proxy: calls go under it.
    front = createServer(uplink(`http://127.0.0.1:${upstreamPort}/platform/`));
    front.listen(0, '127.0.0.1');
    await once(front, 'listening');
    frontPort = (front.address() as AddressInfo).port;
  });
  beforeEach(() => {
    seen.length = 0;
    answer = (req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json', connection: 'x-upstream-hop', 'x-upstream-hop': 'no', 'x-kept': 'yes' });
        res.end('{"ok":true}');
      });
    };
  });
  afterAll(async () => {
    front.closeAllConnections();
    upstream.closeAllConnections();
    await Promise.all([new Promise((resolve) => front.close(resolve)), new Promise((resolve) => upstream.close(resolve))]);
  });

  /** A request written byte for byte (no client normalizes its target): the answer's status and body. */
  async function raw(target: string, headers = ''): Promise<{ status: number; body: string }> {
    const socket = connect(frontPort, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer cpt_agent\r\n${headers}Connection: close\r\n\r\n`);
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    await once(socket, 'close');
    return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) };
  }

  it("forwards the agent channel's calls under the server's URL, the agent's Authorization as sent, hop-by-hop headers dropped both ways", async () => {
    // node:http, not fetch, which will not send a Connection header.
    const outgoing = request({
      port: frontPort,
      host: '127.0.0.1',
      method: 'POST',
      path: '/api/v0/agent/claims?waitMs=10',
      headers: {
        authorization: 'Bearer cpt_agent',
        'content-type': 'application/json',
        'idempotency-key': 'k-1',
        connection: 'keep-alive, x-agent-hop',
        'keep-alive': 'timeout=5',
        'x-agent-hop': 'no',
        'proxy-authorization': 'Basic c2VjcmV0',
      },
    });
    outgoing.end('{"hostname":"vm-1"}');
    const [res] = (await once(outgoing, 'response')) as [IncomingMessage];
    let body = '';
    for await (const chunk of res) body += (chunk as Buffer).toString();
    expect([res.statusCode, JSON.parse(body), res.headers['x-kept'], res.headers['x-upstream-hop']]).toEqual([200, { ok: true }, 'yes', undefined]);
    expect(seen).toHaveLength(1);
    const [call] = seen;
    expect(call).toMatchObject({ method: 'POST', url: '/platform/api/v0/agent/claims?waitMs=10', body: '{"hostname":"vm-1"}' });
    expect(call.headers).toMatchObject({ authorization: 'Bearer cpt_agent', 'idempotency-key': 'k-1', host: `127.0.0.1:${upstreamPort}` });
    for (const dropped of ['x-agent-hop', 'proxy-authorization', 'keep-alive']) expect(call.headers[dropped]).toBeUndefined();
    // No credential of the worker's: nothing but what the agent sent.
    expect(Object.keys(call.headers).filter((name) => /auth|token|cookie/i.test(name))).toEqual(['authorization']);
  });

  it.each([
    ['another part of the API', '/api/v0/worker/heartbeat'],
    ['a prefix without its slash', '/api/v0/agentx/claims'],
    ['the prefix alone', '/api/v0/agent/'],
    ['a dot-dot out of the channel', '/api/v0/agent/../worker/heartbeat'],
    ['a dot-dot percent-encoded', '/api/v0/agent/%2e%2e/worker/heartbeat'],
    ['a dot-dot in capitals', '/api/v0/agent/%2E%2E/%2E%2E/v0/computers'],
    ['a half-encoded dot-dot', '/api/v0/agent/.%2e/worker/leave'],
    ['an encoded slash', '/api/v0/agent/sessions%2f..%2f..%2fworker%2fheartbeat'],
    ['a backslash', '/api/v0/agent/..\\worker\\heartbeat'],
    ['an encoded backslash', '/api/v0/agent/..%5cworker'],
    ['a dot segment', '/api/v0/agent/./claims'],
    ['an empty segment', '/api/v0/agent//claims'],
    ['a bad percent-escape', '/api/v0/agent/%zz'],
    ['an encoded NUL', '/api/v0/agent/claims%00'],
  ])('answers 404 to %s, forwarding nothing', async (_, target) => {
    const res = await raw(target);
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ status: 404, metadata: { code: 'not_found' } });
    expect(seen).toEqual([]);
  });

  it('answers 404 to a request in absolute form, even one naming the server', async () => {
    for (const target of [`http://127.0.0.1:${upstreamPort}/api/v0/agent/claims`, 'http://169.254.169.254/api/v0/agent/claims']) {
      expect((await raw(target)).status).toBe(404);
    }
    expect(seen).toEqual([]);
  });

  it('streams both ways: an event stream reaches the agent event by event, a request body reaches the server chunk by chunk', async () => {
    let nextEvent!: () => void;
    let firstChunkAtServer!: () => void;
    const serverGotFirstChunk = new Promise<void>((resolve) => (firstChunkAtServer = resolve));
    answer = (req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      req.once('data', () => firstChunkAtServer());
      // The second event only once the agent has read the first: were the uplink buffering, neither would come.
      nextEvent = () => res.end('data: two\n\n');
      req.resume();
    };
    const events: string[] = [];
    const outgoing = request({
      port: frontPort,
      host: '127.0.0.1',
      method: 'POST',
      path: '/api/v0/agent/sessions/s-1/events',
      headers: { authorization: 'Bearer cpt_agent' },
    });
    const responded = once(outgoing, 'response') as Promise<[IncomingMessage]>;
    outgoing.write('first chunk');
    // The request is not over: the server has its first chunk all the same.
    await serverGotFirstChunk;
    outgoing.end('last chunk');
    const [response] = await responded;
    expect(response.headers['content-type']).toBe('text/event-stream');
    response.on('data', (chunk: Buffer) => {
      events.push(chunk.toString());
      if (events.length === 1) nextEvent();
    });
    await once(response, 'end');
    expect(events).toEqual(['data: one\n\n', 'data: two\n\n']);
  });

  it('answers 502 when the server cannot be reached', async () => {
    const port = await closedPort();
    const lonely = createServer(uplink(`http://127.0.0.1:${port}`));
    lonely.listen(0, '127.0.0.1');
    await once(lonely, 'listening');
    try {
      const res = await fetch(`http://127.0.0.1:${(lonely.address() as AddressInfo).port}/api/v0/agent/policy`, {
        headers: { authorization: 'Bearer cpt_agent' },
      });
      expect([res.status, ((await res.json()) as { metadata: { code: string } }).metadata.code]).toEqual([502, 'server_unreachable']);
    } finally {
      lonely.closeAllConnections();
      await new Promise((resolve) => lonely.close(resolve));
    }
  });
});

/** A port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const server = createNetServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { AddressPolicy } from '../contract/address-policy';
import { openEgress, type Egress, type EgressOptions } from './egress';

/** A server on 127.0.0.1 that a sandbox must not reach unless the operator allows it, counting what reaches it. */
class LocalServer {
  readonly requests: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];
  connections = 0;
  readonly sockets = new Set<Socket>();
  private readonly server: Server;

  constructor(private readonly name: string) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        this.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        if (req.url === '/slow') {
          setTimeout(() => res.end('slow'), 300);
          return;
        }
        if (req.url === '/redirect') {
          res.writeHead(302, { location: `http://127.0.0.1:${this.port}/next` });
          return res.end('moved');
        }
        res.setHeader('x-served-by', this.name);
        res.setHeader('x-repeated', ['one', 'two']);
        res.end(req.method === 'POST' ? `${this.name} got ${body}` : `hello from ${this.name}`);
      });
    });
    this.server.on('connection', (socket: Socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async start(): Promise<this> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** A connection to a unix socket spoken to by hand, as a program inside the sandbox would. */
class RawClient {
  text = '';
  readonly closed: Promise<void>;
  private waiters: Array<() => void> = [];

  private constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (data: string) => {
      this.text += data;
      this.wake();
    });
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => (this.wake(), resolve())));
  }

  static async open(path: string): Promise<RawClient> {
    const socket = connect({ path });
    await once(socket, 'connect');
    return new RawClient(socket);
  }

  /** Sends `text` and waits for what the other side says until `done` (default: it closes). */
  async exchange(text: string, done: (received: string) => boolean = () => false): Promise<string> {
    this.text = '';
    this.socket.write(text);
    return this.until(done);
  }

  async until(done: (received: string) => boolean, ms = 5_000): Promise<string> {
    const deadline = Date.now() + ms;
    while (!done(this.text) && !this.socket.destroyed && !this.socket.readableEnded) {
      if (Date.now() > deadline) throw new Error(`Nothing conclusive within ${ms} ms; got ${JSON.stringify(this.text)}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return this.text;
  }

  private wake() {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

/** One whole HTTP response at the start of `text` (Content-Length or chunked), or null while it is incomplete. */
function parseResponse(text: string): { status: number; headers: Record<string, string>; body: string } | null {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  let body = text.slice(end + 4);
  if (headers['transfer-encoding'] === 'chunked') {
    const chunks: string[] = [];
    for (let at = 0; ;) {
      const lineEnd = body.indexOf('\r\n', at);
      if (lineEnd < 0) return null;
      const size = parseInt(body.slice(at, lineEnd), 16);
      if (size === 0) break;
      if (body.length < lineEnd + 2 + size + 2) return null;
      chunks.push(body.slice(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
    body = chunks.join('');
  } else if (headers['content-length'] !== undefined && Buffer.byteLength(body) < Number(headers['content-length'])) return null;
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

const complete = (text: string) => parseResponse(text) !== null;

const splice = (port: number): EgressOptions['api'] => ({ kind: 'splice', host: '127.0.0.1', port });

describe('a sandbox egress', () => {
  let target: LocalServer;
  let api: LocalServer;
  let dir: string;
  const egresses: Egress[] = [];
  const refusals: Array<[string, string]> = [];
  let connectionsBefore = 0;

  const open = async (options: Partial<EgressOptions> = {}) => {
    const egress = await openEgress({
      dir: mkdtempSync(join(dir, 'e-')),
      api: splice(api.port),
      policy: new AddressPolicy(),
      onRefusal: (host, reason) => refusals.push([host, reason]),
      ...options,
    });
    egresses.push(egress);
    return egress;
  };

  beforeAll(async () => {
    target = await new LocalServer('target').start();
    api = await new LocalServer('api').start();
    dir = mkdtempSync(join(tmpdir(), 'egress-'));
  });

  beforeEach(() => {
    connectionsBefore = target.connections;
  });

  afterEach(async () => {
    await Promise.all(egresses.splice(0).map((egress) => egress.close()));
    refusals.length = 0;
  });

  afterAll(async () => {
    await target.stop();
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('proxy.sock, as the attacker sees it', () => {
    // Every spelling of "this machine" and of the cloud's metadata service a program might try.
    const forbidden = [
      '127.0.0.1',
      'localhost',
      'localhost.',
      'LOCALHOST',
      '[::1]',
      '0.0.0.0',
      '127.1',
      '2130706433',
      '0x7f.1',
      '[::ffff:127.0.0.1]',
      '[::127.0.0.1]',
      '169.254.169.254',
      'metadata.google.internal',
      '10.0.0.1',
      '192.168.0.1',
      hostname(),
    ];

    it.each(forbidden)('CONNECT %s to a server on 127.0.0.1 answers 403 with the reason, and logs the refusal', async (host) => {
      const egress = await open();
      const client = await RawClient.open(egress.proxySocket);
      const response = parseResponse(await client.exchange(`CONNECT ${host}:${target.port} HTTP/1.1\r\nHost: ${host}:${target.port}\r\n\r\n`));
      await client.closed;
      expect(response?.status).toBe(403);
      expect(response?.body).toMatch(/^[^\n]+\n$/);
      expect(response?.body).toMatch(/loopback|unspecified|metadata|private|global unicast/);
      expect(refusals).toEqual([[host, response?.body.trim()]]);
      expect(target.connections).toBe(connectionsBefore);
    });

    it.each(forbidden)('GET http://%s/ (absolute form) answers 403 with the reason, and logs the refusal', async (host) => {
      const egress = await open();
      const client = await RawClient.open(egress.proxySocket);
      const response = parseResponse(await client.exchange(`GET http://${host}:${target.port}/ HTTP/1.1\r\nHost: ${host}:${target.port}\r\n\r\n`, complete));
      expect(response?.status).toBe(403);
      expect(response?.body).toMatch(/^[^\n]+\n$/);
      expect(response?.body).toMatch(/loopback|unspecified|metadata|private|global unicast/);
      expect(refusals).toHaveLength(1);
      expect(target.connections).toBe(connectionsBefore);
    });

    it("answers 403 to node's own HTTP client asked to go through the proxy", async () => {
      const egress = await open();
      const response = await new Promise<IncomingMessage>((resolve, reject) =>
        request({ socketPath: egress.proxySocket, path: `http://127.0.0.1:${target.port}/`, headers: { host: `127.0.0.1:${target.port}` } }, resolve)
          .on('error', reject)
          .end(),
      );
      const body = await readBody(response);
      expect(response.statusCode).toBe(403);
      expect(body).toBe('127.0.0.1 is a loopback address (127.0.0.0/8)\n');
      expect(target.connections).toBe(connectionsBefore);
    });

    it('keeps the connection after a refusal of an absolute-form request, and refuses the next one too', async () => {
      const egress = await open();
      const client = await RawClient.open(egress.proxySocket);
      for (const host of ['127.0.0.1', '169.254.169.254']) {
        const response = parseResponse(await client.exchange(`GET http://${host}/ HTTP/1.1\r\nHost: ${host}\r\n\r\n`, complete));
        expect(response?.status).toBe(403);
      }
      expect(refusals.map(([host]) => host)).toEqual(['127.0.0.1', '169.254.169.254']);
    });

    it.each([
      ['a CONNECT without a port', 'CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n'],
      ['a CONNECT with credentials', 'CONNECT user@127.0.0.1:80 HTTP/1.1\r\n\r\n'],
      ['a CONNECT to a URL', 'CONNECT http://127.0.0.1:80/ HTTP/1.1\r\n\r\n'],
      ['a CONNECT to a bad port', 'CONNECT 127.0.0.1:123456 HTTP/1.1\r\n\r\n'],
      ['an origin-form request', 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'],
      ['an https:// request (CONNECT is for that)', 'GET https://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n'],
      ['another scheme', 'GET ftp://example.com/file HTTP/1.1\r\nHost: example.com\r\n\r\n'],
      ['credentials in the URL', 'GET http://user:pw@example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n'],
      ['a port out of range', 'GET http://example.com:99999/ HTTP/1.1\r\nHost: example.com\r\n\r\n'],
      ['a request line that is not HTTP', 'HELLO THERE\r\n\r\n'],
      ['garbage', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n'],
    ])('answers 400 to %s', async (_, text) => {
      const egress = await open();
      const client = await RawClient.open(egress.proxySocket);
      const response = parseResponse(await client.exchange(text, complete));
      expect(response?.status).toBe(400);
      expect(target.connections).toBe(connectionsBefore);
    });

    it('answers 431 to oversized headers', async () => {
      const egress = await open();
      const client = await RawClient.open(egress.proxySocket);
      const response = parseResponse(
        await client.exchange(`GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, complete),
      );
      expect(response?.status).toBe(431);
    });
  });

  describe('proxy.sock, with the operator allowing the local server by name', () => {
    it('tunnels CONNECT 127.0.0.1 when 127.0.0.1 is allowed: 200 Connection Established, then bytes both ways', async () => {
      const egress = await open({ policy: new AddressPolicy({ allowedHosts: ['127.0.0.1'] }) });
      const client = await RawClient.open(egress.proxySocket);
      const established = await client.exchange(`CONNECT 127.0.0.1:${target.port} HTTP/1.1\r\nHost: 127.0.0.1:${target.port}\r\n\r\n`, (text) =>
        text.includes('\r\n\r\n'),
      );
      expect(established).toBe('HTTP/1.1 200 Connection Established\r\n\r\n');
      const response = parseResponse(await client.exchange(`GET /through-the-tunnel HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, complete));
      expect(response).toMatchObject({ status: 200, body: 'hello from target' });
      expect(target.requests.at(-1)?.url).toBe('/through-the-tunnel');
      expect(refusals).toEqual([]);
    });

    it('passes on the bytes a client sends right behind its CONNECT', async () => {
      const egress = await open({ policy: new AddressPolicy({ allowedHosts: ['127.0.0.1'] }) });
      const client = await RawClient.open(egress.proxySocket);
      const text = await client.exchange(`CONNECT 127.0.0.1:${target.port} HTTP/1.1\r\n\r\nGET /eager HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, (received) =>
        complete(received.replace('HTTP/1.1 200 Connection Established\r\n\r\n', '')),
      );
      expect(parseResponse(text.replace('HTTP/1.1 200 Connection Established\r\n\r\n', ''))).toMatchObject({ status: 200, body: 'hello from target' });
      expect(target.requests.at(-1)?.url).toBe('/eager');
    });

    it('forwards an absolute-form GET: path and query untouched, Host from the URL, proxy headers dropped', async () => {
      const egress = await open({ policy: new AddressPolicy({ allowedHosts: ['127.0.0.1'] }) });
      const client = await RawClient.open(egress.proxySocket);
      const response = parseResponse(
        await client.exchange(
          `GET http://127.0.0.1:${target.port}/a/../b%2f?q=1&r=%20 HTTP/1.1\r\nHost: elsewhere.example\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nX-Keep: yes\r\nConnection: X-Drop\r\nX-Drop: no\r\n\r\n`,
          complete,
        ),
      );
      expect(response).toMatchObject({ status: 200, body: 'hello from target' });
      expect(response?.headers['x-served-by']).toBe('target');
      expect(client.text).toContain('x-repeated: one\r\nx-repeated: two\r\n');
      const seen = target.requests.at(-1)!;
      expect(seen.url).toBe('/a/../b%2f?q=1&r=%20');
      expect(seen.headers.host).toBe(`127.0.0.1:${target.port}`);
      expect(seen.headers['x-keep']).toBe('yes');
      for (const dropped of ['proxy-authorization', 'proxy-connection', 'x-drop']) expect(seen.headers[dropped]).toBeUndefined();
    });

    it('forwards a request body', async () => {
      const egress = await open({ policy: new AddressPolicy({ allowedHosts: ['127.0.0.1'] }) });
      const client = await RawClient.open(egress.proxySocket);
      const fixed = parseResponse(
        await client.exchange(`POST http://127.0.0.1:${target.port}/in HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nping`, complete),
      );
      expect(fixed).toMatchObject({ status: 200 });
      expect(fixed?.body).toContain('target got ping');
      const chunked = await client.exchange(
        `POST http://127.0.0.1:${target.port}/in HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\npong\r\n0\r\n\r\n`,
        (text) => text.includes('target got pong'),
      );
      expect(chunked).toMatch(/^HTTP\/1\.1 200 OK/);
    });

    it('passes a redirect back as it is, without following it', async () => {
      const egress = await open({ policy: new AddressPolicy({ allowedHosts: ['127.0.0.1'] }) });
      const before = target.requests.length;
      const client = await RawClient.open(egress.proxySocket);
      const response = parseResponse(await client.exchange(`GET http://127.0.0.1:${target.port}/redirect HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, complete));
      expect(response).toMatchObject({ status: 302, body: 'moved' });
      expect(response?.headers.location).toBe(`http://127.0.0.1:${target.port}/next`);
      expect(target.requests.slice(before).map((r) => r.url)).toEqual(['/redirect']);
    });

    it('with localhost allowed: CONNECT localhost and GET http://localhost/ both work, 127.0.0.1 stays refused', async () => {
      const egress = await open({ policy: new AddressPolicy({ allowedHosts: ['localhost'] }) });
      const tunnel = await RawClient.open(egress.proxySocket);
      expect(await tunnel.exchange(`CONNECT localhost:${target.port} HTTP/1.1\r\n\r\n`, (text) => text.includes('\r\n\r\n'))).toBe(
        'HTTP/1.1 200 Connection Established\r\n\r\n',
      );
      expect(parseResponse(await tunnel.exchange(`GET /via-localhost HTTP/1.1\r\nHost: localhost\r\n\r\n`, complete))).toMatchObject({
        status: 200,
        body: 'hello from target',
      });

      const response = await new Promise<IncomingMessage>((resolve, reject) =>
        request({ socketPath: egress.proxySocket, path: `http://localhost:${target.port}/by-name`, headers: { host: `localhost:${target.port}` } }, resolve)
          .on('error', reject)
          .end(),
      );
      expect(response.statusCode).toBe(200);
      expect(await readBody(response)).toBe('hello from target');
      expect(target.requests.at(-1)?.headers.host).toBe(`localhost:${target.port}`);

      const refused = await RawClient.open(egress.proxySocket);
      expect(parseResponse(await refused.exchange(`CONNECT 127.0.0.1:${target.port} HTTP/1.1\r\n\r\n`))?.status).toBe(403);
      expect(refusals).toEqual([['127.0.0.1', '127.0.0.1 is a loopback address (127.0.0.0/8)']]);
    });

    it('with only localhost:<another port> allowed, the server stays out of reach', async () => {
      const egress = await open({ policy: new AddressPolicy({ allowedHosts: [`localhost:${target.port + 1}`] }) });
      const client = await RawClient.open(egress.proxySocket);
      expect(parseResponse(await client.exchange(`CONNECT localhost:${target.port} HTTP/1.1\r\n\r\n`))?.status).toBe(403);
    });

    it('connects to the address the policy vetted and never looks the name up again', async () => {
      // app.test does not resolve on this machine: reaching the server proves the proxy used the vetted address.
      const policy = new AddressPolicy({ allowedHosts: ['app.test'], resolve: async () => ['127.0.0.1'] });
      const egress = await open({ policy });
      const client = await RawClient.open(egress.proxySocket);
      expect(parseResponse(await client.exchange(`GET http://app.test:${target.port}/vetted HTTP/1.1\r\nHost: app.test\r\n\r\n`, complete))).toMatchObject({
        status: 200,
      });
      expect(target.requests.at(-1)).toMatchObject({ url: '/vetted', headers: { host: `app.test:${target.port}` } });
    });

    it('answers 502 when the allowed destination does not answer', async () => {
      const closed = await new LocalServer('gone').start();
      const port = closed.port;
      await closed.stop();
      const egress = await open({ policy: new AddressPolicy({ allowedHosts: ['127.0.0.1'] }) });
      const client = await RawClient.open(egress.proxySocket);
      expect(parseResponse(await client.exchange(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`))?.status).toBe(502);
      const again = await RawClient.open(egress.proxySocket);
      expect(parseResponse(await again.exchange(`GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: x\r\n\r\n`, complete))?.status).toBe(502);
    });
  });

  describe('api.sock', () => {
    it("reaches the platform's port", async () => {
      const egress = await open();
      const client = await RawClient.open(egress.apiSocket);
      const response = parseResponse(await client.exchange('GET /v0/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', complete));
      expect(response).toMatchObject({ status: 200, body: 'hello from api' });
      expect(api.requests.at(-1)?.url).toBe('/v0/health');
    });

    it('reaches only that port: proxy requests sent to it go to the platform, never to their target', async () => {
      const egress = await open();
      const before = api.requests.length;
      const absolute = await RawClient.open(egress.apiSocket);
      expect(
        parseResponse(await absolute.exchange(`GET http://127.0.0.1:${target.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${target.port}\r\n\r\n`, complete)),
      ).toMatchObject({
        status: 200,
        body: 'hello from api',
      });
      const tunnel = await RawClient.open(egress.apiSocket);
      const answer = await tunnel.exchange(`CONNECT 127.0.0.1:${target.port} HTTP/1.1\r\nHost: 127.0.0.1:${target.port}\r\n\r\n`);
      expect(answer).not.toContain('200 Connection Established');
      expect(api.requests.length).toBe(before + 1);
      expect(target.connections).toBe(connectionsBefore);
    });

    it('closes the connection when the platform does not answer', async () => {
      const down = await new LocalServer('down').start();
      const port = down.port;
      await down.stop();
      const egress = await open({ api: splice(port) });
      const client = await RawClient.open(egress.apiSocket);
      client.socket.write('GET / HTTP/1.1\r\n\r\n');
      await client.closed;
      expect(client.text).toBe('');
    });
  });

  describe('api.sock served in process (the http kind)', () => {
    const handled: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];
    const handle = (req: IncomingMessage, res: ServerResponse) => {
      if (req.url === '/throws') throw new Error('the handler failed');
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        handled.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
        if (req.url === '/stream') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: one\n\n');
          setTimeout(() => res.end('data: two\n\n'), 50);
          return;
        }
        res.writeHead(201, { 'x-handled': 'yes' });
        res.end(`handled ${req.method} ${req.url} ${Buffer.concat(chunks).toString()}`);
      });
    };

    beforeEach(() => {
      handled.length = 0;
    });

    it('hands each request to the handler, with its method, path, headers and body, and sends its answer back', async () => {
      const before = api.requests.length;
      const egress = await open({ api: { kind: 'http', handle } });
      const client = await RawClient.open(egress.apiSocket);
      const response = parseResponse(
        await client.exchange(
          'POST /api/v0/agent/claims?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer cpt_x\r\nContent-Length: 5\r\n\r\nhello',
          complete,
        ),
      );
      expect(response).toMatchObject({ status: 201, headers: { 'x-handled': 'yes' }, body: 'handled POST /api/v0/agent/claims?x=1 hello' });
      expect(handled).toEqual([
        expect.objectContaining({
          method: 'POST',
          url: '/api/v0/agent/claims?x=1',
          body: 'hello',
          headers: expect.objectContaining({ authorization: 'Bearer cpt_x' }),
        }),
      ]);
      expect(api.requests.length).toBe(before);
    });

    it('serves several requests on one connection, and streams an answer as it is written', async () => {
      const egress = await open({ api: { kind: 'http', handle } });
      const client = await RawClient.open(egress.apiSocket);
      expect(parseResponse(await client.exchange('GET /a HTTP/1.1\r\nHost: x\r\n\r\n', complete))?.body).toBe('handled GET /a ');
      const first = await client.exchange('GET /stream HTTP/1.1\r\nHost: x\r\n\r\n', (text) => text.includes('data: one'));
      expect(first).not.toContain('data: two');
      expect(parseResponse(await client.until(complete))?.body).toBe('data: one\n\ndata: two\n\n');
      expect(handled.map((request) => request.url)).toEqual(['/a', '/stream']);
    });

    it('answers 502 when the handler throws, and keeps serving', async () => {
      const egress = await open({ api: { kind: 'http', handle } });
      const client = await RawClient.open(egress.apiSocket);
      expect(parseResponse(await client.exchange('GET /throws HTTP/1.1\r\nHost: x\r\n\r\n', complete))?.status).toBe(502);
    });

    it('is not a proxy: CONNECT gets no tunnel', async () => {
      const egress = await open({ api: { kind: 'http', handle } });
      const tunnel = await RawClient.open(egress.apiSocket);
      const answer = await tunnel.exchange(`CONNECT 127.0.0.1:${target.port} HTTP/1.1\r\nHost: 127.0.0.1:${target.port}\r\n\r\n`);
      expect(answer).not.toContain('200 Connection Established');
      expect(target.connections).toBe(connectionsBefore);
    });

    it('ends open connections on close(), and removes the socket', async () => {
      const egress = await open({ api: { kind: 'http', handle } });
      const client = await RawClient.open(egress.apiSocket);
      client.socket.write('GET /stream HTTP/1.1\r\nHost: x\r\n\r\n');
      await egress.close();
      await client.closed;
      expect(() => statSync(egress.apiSocket)).toThrow();
    });
  });

  describe('limits', () => {
    it('turns away connections beyond the limit with a 503, and takes new ones once some close', async () => {
      const egress = await open({ maxConnections: 2 });
      const first = await RawClient.open(egress.proxySocket);
      const second = await RawClient.open(egress.proxySocket);
      const third = await RawClient.open(egress.proxySocket);
      await third.closed;
      expect(parseResponse(third.text)).toMatchObject({ status: 503, body: "Too many connections through this sandbox's proxy (at most 2)\n" });

      // api.sock has a budget of its own: the agent keeps its way to the platform.
      const agent = await RawClient.open(egress.apiSocket);
      expect(parseResponse(await agent.exchange('GET / HTTP/1.1\r\nHost: x\r\n\r\n', complete))?.status).toBe(200);

      first.socket.destroy();
      await first.closed;
      await new Promise((resolve) => setTimeout(resolve, 50));
      const fourth = await RawClient.open(egress.proxySocket);
      expect(parseResponse(await fourth.exchange(`GET http://10.0.0.1/ HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n`, complete))?.status).toBe(403);
      second.socket.destroy();
    });

    it('counts pipelined requests too: beyond the limit in flight, 503', async () => {
      const egress = await open({ policy: new AddressPolicy({ allowedHosts: ['127.0.0.1'] }), maxConnections: 2 });
      const before = target.requests.length;
      const client = await RawClient.open(egress.proxySocket);
      const get = `GET http://127.0.0.1:${target.port}/slow HTTP/1.1\r\nHost: x\r\n\r\n`;
      const text = await client.exchange(get.repeat(3), (received) => received.split('HTTP/1.1 ').length - 1 === 3 && received.endsWith('\n'));
      expect([...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1])).toEqual(['200', '200', '503']);
      expect(target.requests.length - before).toBe(2);
    });

    it('closes an idle tunnel, both ends', async () => {
      const egress = await open({ policy: new AddressPolicy({ allowedHosts: ['127.0.0.1'] }), idleTimeoutMs: 300 });
      const client = await RawClient.open(egress.proxySocket);
      await client.exchange(`CONNECT 127.0.0.1:${target.port} HTTP/1.1\r\n\r\n`, (text) => text.includes('\r\n\r\n'));
      expect(target.sockets.size).toBe(1);
      const started = Date.now();
      await client.closed;
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      await waitFor(() => target.sockets.size === 0);
    });

    it('closes a half-open tunnel once it goes quiet', async () => {
      // A destination that never closes its side: only the proxy's idle limit ends the tunnel.
      const held = new Set<Socket>();
      const stubborn = createNetServer({ allowHalfOpen: true }, (socket) => {
        held.add(socket);
        socket.on('close', () => held.delete(socket));
      });
      stubborn.listen(0, '127.0.0.1');
      await once(stubborn, 'listening');
      try {
        const port = (stubborn.address() as AddressInfo).port;
        const egress = await open({ policy: new AddressPolicy({ allowedHosts: ['127.0.0.1'] }), idleTimeoutMs: 300 });
        const client = await RawClient.open(egress.proxySocket);
        await client.exchange(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`, (text) => text.includes('\r\n\r\n'));
        expect(held.size).toBe(1);
        client.socket.end(); // half-close, passed on to the destination, which keeps its side open
        await client.closed;
        // The proxy's end is gone: what the destination still writes is refused (reset), and its socket closes.
        const [socket] = held;
        socket.on('error', () => undefined);
        const writer = setInterval(() => socket.write('still here'), 20);
        await waitFor(() => held.size === 0).finally(() => clearInterval(writer));
      } finally {
        stubborn.close();
      }
    });

    it('closes an idle api.sock connection', async () => {
      const egress = await open({ idleTimeoutMs: 300 });
      const client = await RawClient.open(egress.apiSocket);
      await client.closed;
    });
  });

  describe('close()', () => {
    it('ends open tunnels and api connections, and removes the sockets', async () => {
      const egress = await open({ policy: new AddressPolicy({ allowedHosts: ['127.0.0.1'] }) });
      const tunnel = await RawClient.open(egress.proxySocket);
      await tunnel.exchange(`CONNECT 127.0.0.1:${target.port} HTTP/1.1\r\n\r\n`, (text) => text.includes('\r\n\r\n'));
      const agent = await RawClient.open(egress.apiSocket);
      await agent.exchange('GET / HTTP/1.1\r\nHost: x\r\n\r\n', complete);
      expect(target.sockets.size).toBe(1);

      await egress.close();
      await Promise.all([tunnel.closed, agent.closed]);
      await waitFor(() => target.sockets.size === 0);
      for (const path of [egress.proxySocket, egress.apiSocket]) {
        await expect(RawClient.open(path)).rejects.toMatchObject({ code: 'ENOENT' });
      }
      await egress.close();
    });
  });

  describe('the sockets', () => {
    it('are mode 0600, owned by the given user, in a folder made theirs', async () => {
      const owner = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : { uid: process.getuid!(), gid: process.getgid!() };
      const folder = join(mkdtempSync(join(dir, 'o-')), 'sockets');
      const egress = await open({ dir: folder, owner });
      for (const path of [egress.apiSocket, egress.proxySocket]) {
        const stat = statSync(path);
        expect(stat.isSocket()).toBe(true);
        expect(stat.mode & 0o777).toBe(0o600);
        expect({ uid: stat.uid, gid: stat.gid }).toEqual(owner);
      }
      expect(statSync(folder)).toMatchObject({ uid: owner.uid, gid: owner.gid });
      expect(statSync(folder).mode & 0o777).toBe(0o700);
    });

    it('replace sockets a crashed run left behind, and nothing else', async () => {
      const folder = mkdtempSync(join(dir, 's-'));
      // A process that dies listening leaves its socket file behind.
      const crashed = spawnSync(process.execPath, [
        '-e',
        `require('net').createServer().listen(${JSON.stringify(join(folder, 'proxy.sock'))}, () => process.kill(process.pid, 'SIGKILL'))`,
      ]);
      expect(crashed.signal).toBe('SIGKILL');
      expect(statSync(join(folder, 'proxy.sock')).isSocket()).toBe(true);
      const egress = await open({ dir: folder });
      const client = await RawClient.open(egress.proxySocket);
      expect(parseResponse(await client.exchange('GET http://10.0.0.1/ HTTP/1.1\r\nHost: x\r\n\r\n', complete))?.status).toBe(403);

      // One that is alive belongs to another egress: kept, and this one does not open.
      await expect(openEgress({ dir: folder, api: splice(api.port), policy: new AddressPolicy() })).rejects.toThrow(/is in use by another egress/);
      expect(parseResponse(await client.exchange('GET http://10.0.0.2/ HTTP/1.1\r\nHost: x\r\n\r\n', complete))?.status).toBe(403);

      const other = mkdtempSync(join(dir, 'f-'));
      writeFileSync(join(other, 'api.sock'), 'not a socket');
      await expect(openEgress({ dir: other, api: splice(api.port), policy: new AddressPolicy() })).rejects.toThrow(/exists and is not a socket/);
    });

    it('refuse a folder whose socket paths would be too long', async () => {
      await expect(openEgress({ dir: join(dir, 'x'.repeat(120)), api: splice(api.port), policy: new AddressPolicy() })).rejects.toThrow(
        /longer than 107 bytes/,
      );
    });
  });
});

async function readBody(response: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of response) body += chunk;
  return body;
}

async function waitFor(condition: () => boolean, ms = 3_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

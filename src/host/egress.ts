import { chmod, chown, lstat, mkdir, unlink } from 'node:fs/promises';
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, createServer as createNetServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { AddressPolicy } from '../contract/address-policy';

/**
 * What `api.sock` reaches: the platform's own HTTP server, its bytes spliced to `host:port` as they are (the server);
 * or an HTTP server made here, each request handed to `handle` (a process that forwards the agents' requests itself).
 */
export type EgressApi = { kind: 'splice'; host: string; port: number } | { kind: 'http'; handle(req: IncomingMessage, res: ServerResponse): void };

export interface EgressOptions {
  /** The folder bound into the sandbox; `api.sock` and `proxy.sock` are made in it (and it, when missing). */
  dir: string;
  /** What `api.sock` reaches. */
  api: EgressApi;
  /** Judges every destination of `proxy.sock`. */
  policy: Pick<AddressPolicy, 'vet'>;
  /** Called with each refused destination and why, for the security log. */
  onRefusal?: (host: string, reason: string) => void;
  /** The sandbox's user: the sockets (and the folder, when made here) become theirs, mode 0600. */
  owner?: { uid: number; gid: number };
  /** Connections open at once on each socket; more are refused. */
  maxConnections?: number;
  /** A connection (or tunnel) with no bytes either way for this long is closed. */
  idleTimeoutMs?: number;
  /** How long connecting to one address of a destination may take. */
  connectTimeoutMs?: number;
}

export interface Egress {
  readonly apiSocket: string;
  readonly proxySocket: string;
  /** Stops both servers and ends every open connection and tunnel. */
  close(): Promise<void>;
}

export const EGRESS_DEFAULTS = { maxConnections: 64, idleTimeoutMs: 300_000, connectTimeoutMs: 10_000 } as const;

/** Linux's limit on a unix socket's path (108 bytes with the final NUL). */
const MAX_SOCKET_PATH = 107;

/** Headers that describe one hop (RFC 9110 7.6.1), never passed on. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
]);

/**
 * A sandbox's way out, two unix sockets in `dir` that `socat` inside the sandbox forwards loopback
 * ports to: `api.sock` reaches the platform (`options.api`), and `proxy.sock` is an HTTP proxy
 * (CONNECT tunnels and absolute-form `http://` requests) whose every destination goes through the
 * address policy and is reached at the address the policy vetted. Responses pass through as they
 * are: redirects reach the client, which asks the proxy again for the next hop.
 */
export async function openEgress(options: EgressOptions): Promise<Egress> {
  const limits = {
    maxConnections: options.maxConnections ?? EGRESS_DEFAULTS.maxConnections,
    idleTimeoutMs: options.idleTimeoutMs ?? EGRESS_DEFAULTS.idleTimeoutMs,
    connectTimeoutMs: options.connectTimeoutMs ?? EGRESS_DEFAULTS.connectTimeoutMs,
  };
  const apiSocket = join(options.dir, 'api.sock');
  const proxySocket = join(options.dir, 'proxy.sock');
  for (const path of [apiSocket, proxySocket]) {
    if (Buffer.byteLength(path) > MAX_SOCKET_PATH) throw new Error(`The socket path ${path} is longer than ${MAX_SOCKET_PATH} bytes`);
  }
  const madeDir = await mkdir(options.dir, { recursive: true, mode: 0o700 });

  const open = new Set<Socket>();
  const track = (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    socket.setTimeout(limits.idleTimeoutMs);
    // After the HTTP server hands a CONNECT socket over, these two are the only listeners left.
    socket.on('timeout', () => socket.destroy());
    socket.on('error', () => socket.destroy());
  };

  const refuse = (host: string, reason: string) => {
    try {
      options.onRefusal?.(host, reason);
    } catch {
      // the security log failing must not keep the proxy from answering
    }
  };

  const dial = (addresses: string[], port: number) => connectFirst(addresses, port, limits.connectTimeoutMs, track);

  const proxy = createHttpServer({ requireHostHeader: false });
  // The HTTP server gets its connections from `proxyFront` below, so its own socket timeout is the idle limit.
  proxy.timeout = limits.idleTimeoutMs;
  // A parse error while a response is under way (a pipelined request after it) cannot get a response of its own.
  const answering = new WeakSet<Duplex>();
  // Requests and tunnels under way, lookups and upstream connections with them: one connection can pipeline many requests.
  let inFlight = 0;
  const busy = `Too many requests at once through this sandbox's proxy (at most ${limits.maxConnections})`;
  proxy.on('request', (req, res) => {
    answering.add(req.socket);
    res.once('close', () => answering.delete(req.socket));
    if (inFlight >= limits.maxConnections) return reply(res, 503, busy);
    inFlight++;
    res.once('close', () => inFlight--);
    forward(req, res, options.policy, refuse, dial).catch(() => res.destroy());
  });
  proxy.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (inFlight >= limits.maxConnections) return void socket.end(rawResponse(503, busy));
    inFlight++;
    socket.once('close', () => inFlight--);
    tunnel(req, socket as Socket, head, options.policy, refuse, dial).catch(() => socket.destroy());
  });
  proxy.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || error.code === 'ECONNRESET' || answering.has(socket)) return socket.destroy();
    const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
    socket.end(rawResponse(tooLarge ? 431 : 400, tooLarge ? 'Request header fields too large' : 'Malformed HTTP request'));
  });

  const proxyFront = frontServer(
    limits.maxConnections,
    track,
    (socket) => proxy.emit('connection', socket),
    (socket) => socket.end(rawResponse(503, `Too many connections through this sandbox's proxy (at most ${limits.maxConnections})`)),
  );
  const apiFront = frontServer(limits.maxConnections, track, apiAccept(options.api, limits.idleTimeoutMs, track), (socket) => socket.destroy());

  const servers: Server[] = [];
  try {
    for (const [server, path] of [
      [apiFront, apiSocket],
      [proxyFront, proxySocket],
    ] as const) {
      await removeStaleSocket(path);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(path, () => {
          server.off('error', reject);
          resolve();
        });
      });
      servers.push(server);
      await chmod(path, 0o600);
      if (options.owner) await chown(path, options.owner.uid, options.owner.gid);
    }
    if (options.owner && madeDir !== undefined) await chown(options.dir, options.owner.uid, options.owner.gid);
  } catch (error) {
    await closeAll(servers, open);
    throw error;
  }

  let closing: Promise<void> | undefined;
  return {
    apiSocket,
    proxySocket,
    close: () => (closing ??= closeAll(servers, open)),
  };
}

/** How `api.sock` takes a connection: spliced to the platform's port, or served by an HTTP server of its own. */
function apiAccept(api: EgressApi, idleTimeoutMs: number, track: (socket: Socket) => void): (client: Socket) => void {
  if (api.kind === 'splice') {
    return (client) => {
      const upstream = connect({ host: api.host, port: api.port });
      track(upstream);
      splice(client, upstream);
    };
  }
  const server = createHttpServer((req, res) => {
    try {
      api.handle(req, res);
    } catch {
      if (res.headersSent) res.destroy();
      else reply(res, 502, 'The platform could not be reached');
    }
  });
  // Its connections come from the unix socket (`frontServer`): their idle limit is the egress's, and long polls are not cut short.
  server.timeout = idleTimeoutMs;
  server.requestTimeout = 0;
  server.on('clientError', (_error: NodeJS.ErrnoException, socket: Duplex) => socket.destroy());
  return (client) => server.emit('connection', client);
}

/** A unix socket server that counts its connections and turns away those beyond `max`. */
function frontServer(max: number, track: (socket: Socket) => void, accept: (socket: Socket) => void, turnAway: (socket: Socket) => void): Server {
  let count = 0;
  const server = createNetServer({ allowHalfOpen: true }, (socket) => {
    track(socket);
    if (count >= max) return turnAway(socket);
    count++;
    socket.once('close', () => count--);
    accept(socket);
  });
  return server;
}

/** `CONNECT host:port`: a byte tunnel to the vetted address. */
async function tunnel(
  req: IncomingMessage,
  client: Socket,
  head: Buffer,
  policy: Pick<AddressPolicy, 'vet'>,
  refuse: (host: string, reason: string) => void,
  dial: (addresses: string[], port: number) => Promise<Socket>,
): Promise<void> {
  const target = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(req.url ?? '');
  if (!target) return void client.end(rawResponse(400, 'CONNECT needs host:port (an IPv6 address in brackets)'));
  const [, host, port] = target;
  const decision = await policy.vet(host, Number(port));
  if (!decision.allowed) {
    refuse(host, decision.reason);
    return void client.end(rawResponse(403, decision.reason));
  }
  let upstream: Socket;
  try {
    upstream = await dial(decision.addresses, decision.port);
  } catch (error) {
    return void client.end(rawResponse(502, `Could not connect to ${host}:${port}: ${(error as Error).message}`));
  }
  if (client.destroyed) return void upstream.destroy();
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  if (head.length > 0) upstream.write(head);
  splice(client, upstream);
}

/** An absolute-form request (`GET http://host/path`): sent on to the vetted address, its response passed back as it is. */
async function forward(
  req: IncomingMessage,
  res: ServerResponse,
  policy: Pick<AddressPolicy, 'vet'>,
  refuse: (host: string, reason: string) => void,
  dial: (addresses: string[], port: number) => Promise<Socket>,
): Promise<void> {
  const target = parseAbsoluteForm(req.url ?? '');
  if (typeof target === 'string') return reply(res, 400, target);
  const decision = await policy.vet(target.hostname, target.port);
  if (!decision.allowed) {
    refuse(target.hostname, decision.reason);
    return reply(res, 403, decision.reason);
  }
  let upstream: Socket;
  try {
    upstream = await dial(decision.addresses, decision.port);
  } catch (error) {
    return reply(res, 502, `Could not connect to ${target.host}: ${(error as Error).message}`);
  }
  if (req.socket.destroyed) return void upstream.destroy();

  const outgoing = httpRequest({
    method: req.method,
    path: target.path,
    headers: [...endToEnd(req, ['host']), 'Host', target.host],
    setHost: false,
    // No agent: the request goes on this one connection, to the vetted address.
    createConnection: () => upstream,
  });
  outgoing.on('response', (response) => {
    res.writeHead(response.statusCode ?? 502, response.statusMessage, endToEnd(response));
    response.pipe(res);
    response.on('error', () => res.destroy());
  });
  outgoing.on('error', (error) => {
    if (res.headersSent) res.destroy();
    else reply(res, 502, `${target.host} failed: ${error.message}`);
  });
  res.on('close', () => outgoing.destroy());
  req.pipe(outgoing);
}

/**
 * `http://host[:port]/path?query` split without rewriting the path (WHATWG URL would normalize it);
 * the host goes through WHATWG URL, so `http://0x7f.1/` is judged as the 127.0.0.1 it means. A reason when it is not one.
 */
function parseAbsoluteForm(target: string): { hostname: string; port: number; host: string; path: string } | string {
  const match = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)([^#]*)/.exec(target);
  if (!match) return 'This is a proxy: send absolute-form requests (GET http://host/path) or CONNECT host:port';
  const [, scheme, authority, rest] = match;
  if (scheme.toLowerCase() !== 'http') return `Only http:// is forwarded; for ${scheme}:// use CONNECT host:port`;
  if (authority.includes('@')) return 'Credentials in the URL are not forwarded';
  if (/[\\\s]/.test(authority)) return `Not a valid host: ${authority}`;
  let url: URL;
  try {
    url = new URL(`http://${authority}/`);
  } catch {
    return `Not a valid host: ${authority}`;
  }
  if (url.hostname === '') return 'The URL has no host';
  const path = rest === '' ? '/' : rest.startsWith('/') ? rest : `/${rest}`;
  return { hostname: url.hostname, port: url.port === '' ? 80 : Number(url.port), host: url.host, path };
}

/** Connects to the first of `addresses` that answers. */
async function connectFirst(addresses: string[], port: number, timeoutMs: number, track: (socket: Socket) => void): Promise<Socket> {
  let last: Error = new Error('no address');
  for (const address of addresses) {
    try {
      return await new Promise<Socket>((resolve, reject) => {
        // An IP address, so no lookup happens: the address connected to is the one the policy vetted.
        const socket = connect({ host: address, port, allowHalfOpen: true });
        const timer = setTimeout(() => socket.destroy(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
        socket.once('connect', () => {
          clearTimeout(timer);
          socket.off('error', reject);
          track(socket);
          resolve(socket);
        });
        socket.once('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
      });
    } catch (error) {
      last = error as Error;
    }
  }
  throw last;
}

/**
 * Bytes both ways. An end is passed on (half-close); when one side closes before both its directions
 * ended (an error, a reset, the idle timeout, close()), the other is closed too.
 */
function splice(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const follow = (closed: Socket, other: Socket) => () => {
    if (!(closed.readableEnded && closed.writableFinished)) other.destroy();
  };
  a.once('close', follow(a, b));
  b.once('close', follow(b, a));
}

/** A message's headers as sent (names' case, repeats, order), less the hop-by-hop ones, those its Connection names and `drop`. */
export function endToEnd(message: IncomingMessage, drop: string[] = []): string[] {
  const named = new Set([
    ...drop,
    ...String(message.headers.connection ?? '')
      .split(',')
      .map((token) => token.trim().toLowerCase()),
  ]);
  const out: string[] = [];
  for (let i = 0; i < message.rawHeaders.length; i += 2) {
    const name = message.rawHeaders[i].toLowerCase();
    if (!HOP_BY_HOP.has(name) && !named.has(name)) out.push(message.rawHeaders[i], message.rawHeaders[i + 1]);
  }
  return out;
}

function reply(res: ServerResponse, status: number, line: string): void {
  const body = `${oneLine(line)}\n`;
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/** A whole response written on a socket the HTTP server no longer answers on (CONNECT, a parse error, a full proxy). */
function rawResponse(status: number, line: string): string {
  const body = `${oneLine(line)}\n`;
  return `HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ');
}

/** Removes a socket a crashed run left behind; one something still listens on is another egress's, and kept. */
async function removeStaleSocket(path: string): Promise<void> {
  const stat = await lstat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (stat === null) return;
  if (!stat.isSocket()) throw new Error(`${path} exists and is not a socket`);
  const live = await new Promise<boolean>((resolve) => {
    const probe = connect({ path }, () => (probe.destroy(), resolve(true)));
    probe.once('error', () => resolve(false));
  });
  if (live) throw new Error(`${path} is in use by another egress`);
  await unlink(path);
}

/** Closes the servers (which removes their socket files) and every connection. */
async function closeAll(servers: Server[], open: Set<Socket>): Promise<void> {
  const closed = servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
  for (const socket of open) socket.destroy();
  await Promise.all(closed);
}

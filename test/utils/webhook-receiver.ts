import { once } from 'node:events';
import { createServer, IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** What a receiver does with one request: answer a status, hang past the sender's timeout, reset the connection, redirect, or answer 200 slowly. */
export type Behaviour = number | 'hang' | 'reset' | { redirect: string } | { delayMs: number };

export interface ReceivedDelivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The event, parsed, once its signature verified with the path's secret (standardwebhooks, the reference implementation). */
  event: { id: string; seq: number; type: string; occurredAt: number; sessionId: string | null; actor: unknown; data: Record<string, unknown> } | null;
  /** Why verification failed, when it did. */
  invalid?: string;
  /** How it was answered. */
  answered: Behaviour;
  /** When it arrived (Unix ms). */
  at: number;
}

/**
 * A webhook receiver on loopback, as a customer would run one: verifies every request's signature with
 * the secret it was given, answers with what the test scripts per path (then 200), and counts every
 * TCP connection, so a test standing it in for an internal target can say "nothing reached it".
 */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  connections = 0;
  port = 0;
  private server!: Server;
  private readonly sockets = new Set<Socket>();
  private readonly secrets = new Map<string, string>();
  private readonly scripts = new Map<string, Behaviour[]>();

  /** The secret deliveries to `path` must be signed with. */
  secret(path: string, secret: string): void {
    this.secrets.set(path, secret);
  }

  /** The next answers on `path`, in order; 200 after them. */
  script(path: string, ...behaviours: Behaviour[]): void {
    this.scripts.set(path, [...(this.scripts.get(path) ?? []), ...behaviours]);
  }

  /** What reached `path` with a valid signature and was answered 2xx. */
  delivered(path: string): NonNullable<ReceivedDelivery['event']>[] {
    return this.received.filter((r) => r.path === path && r.event && answersOk(r.answered)).map((r) => r.event!);
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  async start(host = '127.0.0.1'): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => this.answer(req.url ?? '', req.headers, body, res));
    });
    this.server.on('connection', (socket: Socket) => {
      this.connections += 1;
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.server.listen(0, host);
    await once(this.server, 'listening');
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private answer(path: string, headers: IncomingHttpHeaders, body: string, res: ServerResponse): void {
    const behaviour = this.scripts.get(path)?.shift() ?? 200;
    const record: ReceivedDelivery = { path, headers, body, event: null, answered: behaviour, at: Date.now() };
    const secret = this.secrets.get(path);
    try {
      if (!secret) throw new Error('no secret for this path');
      record.event = new Webhook(secret).verify(body, {
        'webhook-id': String(headers['webhook-id']),
        'webhook-timestamp': String(headers['webhook-timestamp']),
        'webhook-signature': String(headers['webhook-signature']),
      }) as ReceivedDelivery['event'];
    } catch (error) {
      record.invalid = (error as Error).message;
    }
    this.received.push(record);
    if (behaviour === 'hang') return;
    if (behaviour === 'reset') {
      res.socket?.destroy();
      return;
    }
    if (typeof behaviour === 'object' && 'delayMs' in behaviour) {
      const timer = setTimeout(() => {
        res.writeHead(record.invalid ? 400 : 200, { 'content-type': 'text/plain' });
        res.end(record.invalid ?? 'ok');
      }, behaviour.delayMs);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    if (typeof behaviour === 'object') {
      res.writeHead(302, { location: behaviour.redirect });
      res.end();
      return;
    }
    res.writeHead(record.invalid && behaviour < 300 ? 400 : behaviour, { 'content-type': 'text/plain' });
    res.end(record.invalid ?? 'ok');
  }
}

/** Whether a behaviour answers 2xx (a slow answer is a 200). */
function answersOk(behaviour: Behaviour): boolean {
  return (typeof behaviour === 'number' && behaviour < 300) || (typeof behaviour === 'object' && 'delayMs' in behaviour);
}

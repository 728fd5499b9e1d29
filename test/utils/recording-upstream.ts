import { once } from 'node:events';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A vendor's server standing in at the edge of the world, on loopback: records every request that
 * reaches it, so a test can say "nothing arrived", and answers with whatever the test scripts.
 */
export class RecordingUpstream {
  readonly requests: RecordedRequest[] = [];
  private server!: Server;
  port = 0;

  constructor(private answer: (request: RecordedRequest, res: ServerResponse) => void | Promise<void> = (_, res) => json(res, 200, { ok: true })) {}

  /** Answers from now on with this script. */
  script(answer: (request: RecordedRequest, res: ServerResponse) => void | Promise<void>): void {
    this.answer = answer;
  }

  async start(host = '127.0.0.1'): Promise<this> {
    this.server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
        this.requests.push(recorded);
        void Promise.resolve(this.answer(recorded, res)).catch(() => res.destroy());
      });
    });
    this.server.listen(0, host);
    await once(this.server, 'listening');
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

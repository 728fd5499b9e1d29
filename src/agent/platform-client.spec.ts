import { once } from 'node:events';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { ChannelRefusal, PlatformClient } from './platform-client';

describe('PlatformClient retries', () => {
  let server: Server;
  let answer: (req: IncomingMessage, res: ServerResponse, n: number) => void;
  const seen: Array<{ url: string; key: string | undefined }> = [];
  let client: (retryWindowMs?: number) => PlatformClient;

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push({ url: req.url ?? '', key: req.headers['idempotency-key'] as string | undefined });
      req.resume();
      req.on('end', () => answer(req, res, seen.length));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    client = (retryWindowMs) => new PlatformClient({ baseUrl: `http://127.0.0.1:${port}`, token: 't', retryWindowMs });
  });
  beforeEach(() => (seen.length = 0));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  it('retries 429, 502, 503 and 504 (a proxy page included) with the same Idempotency-Key, honouring Retry-After', async () => {
    answer = (_req, res, n) => {
      if (n === 1) return json(res, 503, { detail: 'restarting' }, { 'retry-after': '0' });
      if (n === 2) return void res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>');
      if (n === 3) return json(res, 429, { detail: 'slow down' }, { 'retry-after': '0' });
      if (n === 4) return json(res, 504, {});
      json(res, 200, { messages: [] });
    };
    const started = Date.now();
    await expect(client().append('s', 't', [{ role: 'assistant', content: [{ type: 'text', text: 'hi' }] }])).resolves.toEqual({ messages: [] });
    expect(seen).toHaveLength(5);
    expect(new Set(seen.map((s) => s.key)).size).toBe(1);
    expect(seen[0].key).toMatch(/^[0-9a-f-]{36}$/);
    // Retry-After: 0 twice; backoff after the others (0.5 s, 2 s).
    expect(Date.now() - started).toBeLessThan(6_000);
  });

  it('does not retry an answer given on purpose: a 4xx or a 500 is a ChannelRefusal at once', async () => {
    for (const status of [400, 409, 500]) {
      seen.length = 0;
      answer = (_req, res) => json(res, status, { detail: 'no', metadata: { code: 'nope' } });
      const error = (await client()
        .endTurn('s', 't', 1)
        .catch((e: unknown) => e)) as ChannelRefusal;
      expect([error instanceof ChannelRefusal, error.status, error.code, seen.length]).toEqual([true, status, 'nope', 1]);
    }
  });

  it('gives up once its window is over, and a heartbeat is tried once', async () => {
    answer = (_req, res) => json(res, 503, {});
    await expect(client(600).usage('s', { turnId: 't', model: 'm' })).rejects.toThrow(/503/);
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen.length).toBeLessThanOrEqual(3);
    seen.length = 0;
    await expect(client().heartbeat('s', 't')).rejects.toThrow(/503/);
    expect(seen).toHaveLength(1);
  });
});

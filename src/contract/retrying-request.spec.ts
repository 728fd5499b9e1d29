import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChannelRefusal, retryAfterMs, retryingRequest } from './retrying-request';

/** A local server answering each request with the next of `answers` (the last one repeats), noting when each came. */
async function scriptedServer(
  answers: Array<{ status: number; headers?: Record<string, string> }>,
): Promise<{ url: string; arrivals: number[]; server: Server }> {
  const arrivals: number[] = [];
  const server = createServer((_req, res) => {
    arrivals.push(Date.now());
    const answer = answers[Math.min(arrivals.length - 1, answers.length - 1)];
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(JSON.stringify(answer.status < 400 ? { ok: true } : { detail: 'no', status: answer.status, title: 'x', metadata: { code: 'rate_limited' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v0/worker/heartbeat`, arrivals, server };
}

const post = (url: string, retryWindowMs: number) =>
  retryingRequest<{ ok: boolean }>({ method: 'POST', url, path: 'heartbeat', headers: {}, body: '{}', retryWindowMs });

describe('retryingRequest (the worker and agent programs over their channels)', () => {
  let server: Server | undefined;
  afterEach(() => new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined))));

  it('a 429 waits what its Retry-After asks before it tries again, then answers', async () => {
    const scripted = await scriptedServer([{ status: 429, headers: { 'retry-after': '1' } }, { status: 200 }]);
    server = scripted.server;
    expect(await post(scripted.url, 10_000)).toEqual({ ok: true });
    expect(scripted.arrivals).toHaveLength(2);
    // Never sooner than asked (a lower bound: a busy machine only makes it later).
    expect(scripted.arrivals[1] - scripted.arrivals[0]).toBeGreaterThanOrEqual(990);
  });

  it('gives up with the last answer once its window is spent, and a 4xx other than 429 is refused at once', async () => {
    const busy = await scriptedServer([{ status: 429, headers: { 'retry-after': '1' } }]);
    server = busy.server;
    await expect(post(busy.url, 500)).rejects.toThrow('POST heartbeat: 429');
    expect(busy.arrivals).toHaveLength(1);
    await new Promise((resolve) => busy.server.close(resolve));

    const refusing = await scriptedServer([{ status: 401 }]);
    server = refusing.server;
    const refusal = await post(refusing.url, 10_000).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ChannelRefusal);
    expect((refusal as ChannelRefusal).status).toBe(401);
    expect(refusing.arrivals).toHaveLength(1);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs('Mon, 30 Nov 2026 12:00:10 GMT', Date.parse('Mon, 30 Nov 2026 12:00:00 GMT'))).toBe(10_000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(null)).toBeUndefined();
  });
});

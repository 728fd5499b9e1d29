import http from 'node:http';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { Role } from '../../src/modules/auth';
import { COMPRESS_FROM_BYTES } from '../../src/platform/http/compression';
import { createUser, TestUser } from '../utils/factories';
import { openStream } from '../utils/sse';
import { startTestApp, TestApp } from '../utils/test-app';

/** The raw answer, bytes as sent: no client-side decoding. */
function raw(
  t: TestApp,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: Buffer }> {
  const { port } = t.app.getHttpServer().address() as { port: number };
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, path, method: body ? 'POST' : 'GET', headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, bytes: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

describe('Response compression', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createUser(t, Role.Owner);
  });

  afterAll(() => t.close());

  it('compresses a large answer with brotli or gzip, as the client accepts, to the same JSON', async () => {
    const plain = await raw(t, '/docs-json', {});
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.bytes.length).toBeGreaterThan(COMPRESS_FROM_BYTES);

    const br = await raw(t, '/docs-json', { 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toMatch(/accept-encoding/i);
    expect(br.bytes.length).toBeLessThan(plain.bytes.length / 4);
    expect(JSON.parse(brotliDecompressSync(br.bytes).toString('utf8'))).toEqual(JSON.parse(plain.bytes.toString('utf8')));

    const gzip = await raw(t, '/docs-json', { 'accept-encoding': 'gzip' });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(gzip.bytes).toString('utf8'))).toEqual(JSON.parse(plain.bytes.toString('utf8')));

    // Only what the client names: deflate alone, or identity, gets the answer as it is.
    for (const accept of ['deflate', 'identity'])
      expect((await raw(t, '/docs-json', { 'accept-encoding': accept })).headers['content-encoding']).toBeUndefined();
  });

  it('leaves small answers as they are', async () => {
    const res = await raw(t, '/api/v0/sessions', { 'accept-encoding': 'br, gzip', authorization: owner.auth.Authorization });
    expect(res.status).toBe(200);
    expect(res.bytes.length).toBeLessThan(COMPRESS_FROM_BYTES);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(res.bytes.toString('utf8'))).toHaveProperty('sessions');
  });

  it('never compresses an event stream: events arrive one by one', async () => {
    const { port } = t.app.getHttpServer().address() as { port: number };
    const stream = await openStream(`http://127.0.0.1:${port}`, '/api/v0/events', { ...owner.auth, 'accept-encoding': 'br, gzip' });
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers['content-encoding']).toBeUndefined();
      await t.http().post('/api/v0/sessions').set(owner.auth).send({ title: 'streamed' }).expect(201);
      await stream.until((s) => s.events.some((e) => e.event === 'session.created'), 'session.created');
    } finally {
      stream.close();
    }
  });

  it('does not inflate a compressed request body: the body is the bytes that arrive, not what they would inflate to', async () => {
    // Valid JSON once inflated: a server that inflated bodies would create the session, and would spend its CPU and
    // memory on whatever a client's few bytes inflate to.
    const body = gzipSync(Buffer.from(JSON.stringify({ title: 'inflated' })));
    const res = await raw(
      t,
      '/api/v0/sessions',
      { authorization: owner.auth.Authorization, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body,
    );
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    const sessions = await t.http().get('/api/v0/sessions').set(owner.auth).expect(200);
    expect(sessions.body.sessions.map((s: { title?: string }) => s.title)).not.toContain('inflated');
  });
});

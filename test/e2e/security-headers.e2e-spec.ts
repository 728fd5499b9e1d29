import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

const CHROMIUM = '/usr/bin/chromium';

/** What every answer must say about itself, whoever asked and however it ended. */
function expectLockedDown(res: Response, label: string) {
  expect({ label, nosniff: res.headers['x-content-type-options'], cache: res.headers['cache-control'] }).toEqual({
    label,
    nosniff: 'nosniff',
    cache: 'no-store',
  });
}

describe('Response headers', () => {
  let t: TestApp;
  let member: TestUser;
  let guest: TestUser;

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: '1000' });
    member = await createUser(t, Role.Member);
    guest = await createUser(t, Role.Guest);
  });

  afterAll(() => t.close());

  const http = () => t.http();

  describe('authenticated routes, success and error alike: Cache-Control no-store, X-Content-Type-Options nosniff', () => {
    it.each([
      ['200 list of keys', () => http().get('/settings/api-keys').set(member.auth), 200],
      ['201 new session', () => http().post('/api/v0/sessions').set(member.auth).send({}), 201],
      ['403 analytics (not for members)', () => http().get('/api/v1/analytics/activity').set(member.auth), 403],
      ['200 readiness', () => http().get('/api/organization/maturity-level').set(member.auth), 200],
      ['400 invalid body', () => http().post('/settings/api-keys').set(member.auth).send({ name: 12 }), 400],
      ['400 invalid JSON', () => http().post('/settings/api-keys').set(member.auth).set('content-type', 'application/json').send('{"name":'), 400],
      ['401 missing credentials', () => http().get('/api/v0/computers'), 401],
      [
        '401 unknown key',
        () =>
          http()
            .get('/api/v0/computers')
            .set('Authorization', `Bearer apk_${'A'.repeat(43)}`),
        401,
      ],
      ['401 analytics flavour', () => http().get('/api/v1/analytics/activity'), 401],
      [
        '403 guest',
        () =>
          http()
            .post('/api/v0/computers')
            .set(guest.auth)
            .send({ name: 'x', provider: 'byom', hostId: '01a1fdca-0000-7000-8000-000000000001', remoteUser: 'u' }),
        403,
      ],
      ['404 unknown computer', () => http().get('/api/v0/computers/01a1fdca-0000-7000-8000-000000000000').set(member.auth), 404],
      ['404 unknown route', () => http().get('/api/v0/nowhere').set(member.auth), 404],
      [
        '413 too large',
        () =>
          http()
            .post('/settings/api-keys')
            .set(member.auth)
            .send({ name: 'x'.repeat(2 * 1024 * 1024) }),
        413,
      ],
      ['415 not JSON', () => http().post('/settings/api-keys').set(member.auth).set('content-type', 'text/plain').send('name'), 415],
      ['400 malformed URL', () => http().get('/api/v0/computers/%E0%A4%A').set(member.auth), 400],
    ])('%s', async (label, send, status) => {
      const res = await send();
      expect({ label, status: res.status }).toEqual({ label, status });
      expectLockedDown(res, label);
    });

    it('a 429 from the rate limit says so too', async () => {
      const limited = await startTestApp({ RATE_LIMIT_CREDENTIAL_PER_MINUTE: '1' });
      try {
        const user = await createUser(limited, Role.Member);
        await limited.http().get('/settings/api-keys').set(user.auth);
        const res = await limited.http().get('/settings/api-keys').set(user.auth);
        expect(res.status).toBe(429);
        expectLockedDown(res, '429');
      } finally {
        await limited.close();
      }
    });
  });

  it.each([['/healthz'], ['/livez'], ['/docs-json'], ['/docs']])('public %s: nosniff and no-store too', async (path) => {
    const res = await http().get(path);
    expect(res.status).toBe(200);
    expectLockedDown(res, path);
  });

  it('an answer to malformed HTTP, written on the socket, says nosniff and no-store too', async () => {
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n'));
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString()));
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400/);
    expect(raw).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/i);
    expect(raw).toMatch(/\r\nCache-Control: no-store\r\n/i);
  });

  describe('/docs', () => {
    let html: string;
    let csp: string;

    beforeAll(async () => {
      const res = await http().get('/docs').expect(200);
      html = res.text;
      csp = res.headers['content-security-policy'];
    });

    const directive = (name: string) =>
      csp
        .split(';')
        .map((part) => part.trim())
        .find((part) => part.startsWith(`${name} `)) ?? '';

    it("has a Content-Security-Policy that runs only this origin's scripts and cannot be framed", () => {
      expect(directive('default-src')).toBe("default-src 'none'");
      expect(directive('script-src')).toBe("script-src 'self'");
      expect(directive('object-src')).toBe("object-src 'none'");
      expect(directive('frame-ancestors')).toBe("frame-ancestors 'none'");
      expect(directive('base-uri')).toBe("base-uri 'none'");
    });

    it('serves no inline script, and every script it loads comes from this origin as JavaScript', async () => {
      const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
      expect(scripts.length).toBeGreaterThan(0);
      for (const [, attributes, body] of scripts) {
        const src = /\bsrc="([^"]+)"/.exec(attributes)?.[1];
        expect({ attributes, src: src !== undefined, body: body.trim() }).toEqual({ attributes, src: true, body: '' });
        expect(src).not.toMatch(/^(https?:)?\/\//);
        const asset = await http().get(new URL(src!, 'http://x/docs').pathname);
        expect(asset.status).toBe(200);
        // nosniff: a script served with another type would not run.
        expect(asset.headers['content-type']).toMatch(/^(application|text)\/javascript/);
      }
      expect(html).not.toMatch(/\son[a-z]+\s*=/i);
    });

    it("Swagger UI keeps the bearer key out of the browser's storage and asks no outside validator", async () => {
      const init = await http().get('/docs/swagger-ui-init.js').expect(200);
      const options = JSON.parse(/"customOptions":\s*(\{[^}]*\})/.exec(init.text)![1]) as Record<string, unknown>;
      expect(options).toMatchObject({ persistAuthorization: false, validatorUrl: null });
    });

    (existsSync(CHROMIUM) ? it : it.skip)(
      'renders in Chromium with no Content-Security-Policy violation',
      async () => {
        const { port } = t.app.getHttpServer().address() as AddressInfo;
        const run = spawn(
          CHROMIUM,
          [
            '--headless',
            '--no-sandbox',
            '--disable-gpu',
            '--disable-quic',
            '--no-first-run',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
            '--enable-logging=stderr',
            '--v=0',
            '--virtual-time-budget=10000',
            '--dump-dom',
            `http://127.0.0.1:${port}/docs`,
          ],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let dom = '';
        let log = '';
        run.stdout.on('data', (chunk: Buffer) => (dom += chunk.toString()));
        run.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
        await new Promise((resolve) => run.once('close', resolve));
        // Rendered by Swagger UI's scripts: the title and one block per operation.
        expect(dom).toMatch(/class="title">Agent Platform API/);
        expect(dom.match(/opblock-summary-path/g)?.length ?? 0).toBeGreaterThan(30);
        const console = log.split('\n').filter((line) => /CONSOLE/.test(line));
        expect(console.filter((line) => /Content Security Policy|Refused to/i.test(line))).toEqual([]);
      },
      60_000,
    );
  });
});

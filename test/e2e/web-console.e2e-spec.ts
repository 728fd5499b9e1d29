import { spawnSync } from 'node:child_process';
import { get, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { CONSOLE_DIR } from '../../src/platform/http/web-console';
import { createUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

const ROOT = join(__dirname, '..', '..');
const BROWSER_NAVIGATION = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
/** The budget for the first load: the JavaScript index.html loads, compressed. */
const FIRST_LOAD_BUDGET = 250 * 1024;

/**
 * The web console as the server serves it (no browser; test/browser drives one): which requests get the console and
 * which the API, its caching, its Content-Security-Policy, its first load's size, and the OpenAPI document its
 * types are generated from.
 */
describe('Web console, served', () => {
  let t: TestApp;
  let index: Response;

  beforeAll(async () => {
    if (!existsSync(join(CONSOLE_DIR, 'index.html'))) throw new Error(`${CONSOLE_DIR} is missing: run npm run build (npm test does) first.`);
    t = await startTestApp({ APP_URL: 'https://console.example.test' });
    index = await t.http().get('/').set('Accept', BROWSER_NAVIGATION);
  });

  afterAll(() => t.close());

  const http = () => t.http();
  const scriptsOf = (html: string) => [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];

  describe('which requests get the console', () => {
    it.each([['/'], ['/settings/api-keys'], ['/sessions/01a1fdca-0000-7000-8000-000000000001'], ['/no/such/page'], ['/sign-in?next=%2F']])(
      'a browser navigation to %s gets index.html, without credentials (the console shows its page, or its 404 page)',
      async (path) => {
        const res = await http().get(path).set('Accept', BROWSER_NAVIGATION);
        expect(res.status).toBe(200);
        expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(res.text).toContain('<div id="root"></div>');
        expect(res.headers['x-request-id']).toMatch(/^req_/);
      },
    );

    it('GET /settings/api-keys is the API for API clients: no Accept, */*, JSON, or JSON preferred over HTML', async () => {
      const member = await createUser(t, Role.Member);
      for (const accept of [undefined, '*/*', 'application/json', 'text/html;q=0.5, application/json', 'application/json, text/html;q=0.9', 'text/html;q=0']) {
        const anonymous = http().get('/settings/api-keys');
        const authenticated = http().get('/settings/api-keys').set(member.auth);
        if (accept) {
          anonymous.set('Accept', accept);
          authenticated.set('Accept', accept);
        }
        const [refused, listed] = await Promise.all([anonymous, authenticated]);
        expect({ accept, status: refused.status, type: refused.headers['content-type'] }).toEqual({
          accept,
          status: 401,
          type: 'application/json; charset=utf-8',
        });
        expect({ accept, status: listed.status, keys: (listed.body as { apiKeys: unknown[] }).apiKeys?.length }).toEqual({ accept, status: 200, keys: 1 });
      }
    });

    it('...and the console for a navigation, HTML at least as preferred as JSON; POST stays the API', async () => {
      for (const accept of ['text/html', 'application/json;q=0.5, text/html', 'text/html, application/json']) {
        const res = await http().get('/settings/api-keys').set('Accept', accept);
        expect({ accept, status: res.status, type: res.headers['content-type'] }).toEqual({ accept, status: 200, type: 'text/html; charset=utf-8' });
        // Caches keep the two apart.
        expect(res.headers.vary).toMatch(/Accept/);
      }
      const post = await http().post('/settings/api-keys').set('Accept', BROWSER_NAVIGATION).send({ name: 'x' });
      expect(post.status).toBe(401);
      expect(post.headers['content-type']).toMatch(/^application\/json/);
    });

    it("HEAD answers the console's headers", async () => {
      const res = await http().head('/settings/api-keys').set('Accept', BROWSER_NAVIGATION);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    });

    it.each([
      ['/api/v0/nowhere', 404, /^application\/json/],
      ['/api/v0/sessions', 401, /^application\/json/],
      ['/api/organization/maturity-level', 401, /^application\/json/],
      ['/api', 404, /^application\/json/],
      ['/healthz', 200, /^application\/json/],
      ['/docs-json', 200, /^application\/json/],
      ['/assets/index-missing.js', 404, /^application\/json/],
    ])("the API's own paths stay the API even for a browser: %s answers %s", async (path, status, type) => {
      const res = await http().get(path).set('Accept', BROWSER_NAVIGATION);
      expect(res.status).toBe(status);
      expect(res.headers['content-type']).toMatch(type);
      expect(res.text).not.toContain('<div id="root">');
    });

    it('/docs stays Swagger UI, with its own policy', async () => {
      const res = await http().get('/docs').set('Accept', BROWSER_NAVIGATION).expect(200);
      expect(res.text).toMatch(/swagger-ui/);
      expect(res.headers['content-security-policy']).toContain("style-src 'self' 'unsafe-inline'");
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it("an unknown path for an API client is the API's JSON 404", async () => {
      const res = await http().get('/no/such/page').set('Accept', '*/*');
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ status: 404, metadata: { code: 'route_not_found' } });
    });
  });

  describe('caching', () => {
    it('index.html: no-cache (revalidated on every load, so a deploy is seen at once), nosniff', () => {
      expect(index.headers['cache-control']).toBe('no-cache');
      expect(index.headers['x-content-type-options']).toBe('nosniff');
    });

    it('hashed assets: public, a year, immutable; gzip when asked, the same bytes', async () => {
      const assets = [...index.text.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
      expect(assets.length).toBeGreaterThanOrEqual(2);
      for (const asset of assets) {
        const plain = await raw(t, asset, { 'accept-encoding': 'identity' });
        expect({ asset, status: plain.status, cache: plain.headers['cache-control'], nosniff: plain.headers['x-content-type-options'] }).toEqual({
          asset,
          status: 200,
          cache: 'public, max-age=31536000, immutable',
          nosniff: 'nosniff',
        });
        expect(plain.headers['content-type']).toMatch(/^(text\/javascript|text\/css)/);
        const zipped = await raw(t, asset, { 'accept-encoding': 'gzip, br' });
        expect(zipped.headers['content-encoding']).toBe('gzip');
        expect(zipped.body.length).toBeLessThan(plain.body.length);
        expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
      }
    });

    it('other files (the icon) are revalidated', async () => {
      const res = await http().get('/favicon.svg').expect(200);
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-type']).toBe('image/svg+xml');
    });
  });

  describe('Content-Security-Policy of the console', () => {
    const directives = (res: Response) =>
      new Map(
        String(res.headers['content-security-policy'])
          .split(';')
          .map((part) => {
            const [name, ...values] = part.trim().split(/\s+/);
            return [name, values.join(' ')] as const;
          }),
      );

    it('runs only its own scripts, styles by its own files or a fresh nonce, calls its API, is never framed', async () => {
      const policy = directives(index);
      expect(policy.get('default-src')).toBe("'none'");
      expect(policy.get('script-src')).toBe("'self'");
      expect(policy.get('style-src')).toMatch(/^'self' 'nonce-[A-Za-z0-9+/]{22}=='$/);
      expect(policy.get('frame-ancestors')).toBe("'none'");
      expect(policy.get('object-src')).toBe("'none'");
      expect(policy.get('base-uri')).toBe("'none'");
      expect(policy.get('form-action')).toBe("'none'");
      // Its API: this server, and the configured BASE_URL and APP_URL origins.
      expect(policy.get('connect-src')?.split(' ')).toEqual(expect.arrayContaining(["'self'", t.config.baseUrl, 'https://console.example.test']));
      expect(String(index.headers['content-security-policy'])).not.toContain('unsafe');
    });

    it('the nonce is new on every answer and is the one the page reads', async () => {
      const again = await http().get('/').set('Accept', BROWSER_NAVIGATION);
      const nonceOf = (res: Response) => /'nonce-([^']+)'/.exec(String(res.headers['content-security-policy']))![1];
      expect(nonceOf(again)).not.toBe(nonceOf(index));
      for (const res of [index, again]) expect(res.text).toContain(`<meta name="csp-nonce" content="${nonceOf(res)}" />`);
    });

    it('index.html has no inline script and no inline handler; every script is a same-origin module under /assets/', () => {
      const scripts = scriptsOf(index.text);
      expect(scripts.length).toBeGreaterThan(0);
      for (const [, attributes, body] of scripts) {
        expect(body.trim()).toBe('');
        expect(/\bsrc="([^"]+)"/.exec(attributes)?.[1]).toMatch(/^\/assets\/[\w-]+\.js$/);
      }
      expect(index.text).not.toMatch(/\son[a-z]+\s*=/i);
      expect(index.text).not.toMatch(/<style\b|\sstyle=/i);
    });
  });

  it(`the first load's JavaScript (everything index.html loads, gzip) is at most ${FIRST_LOAD_BUDGET / 1024} KB`, async () => {
    const scripts = [
      ...scriptsOf(index.text).map(([, attributes]) => /\bsrc="([^"]+)"/.exec(attributes)![1]),
      ...[...index.text.matchAll(/<link rel="modulepreload"[^>]*href="([^"]+)"/g)].map((m) => m[1]),
    ];
    let total = 0;
    for (const script of scripts) {
      const res = await raw(t, script, { 'accept-encoding': 'gzip' });
      expect(res.headers['content-encoding']).toBe('gzip');
      total += res.body.length;
    }
    console.log(
      `Web console: first load ${scripts.length} script(s), ${(total / 1024).toFixed(1)} KB of gzip JavaScript (budget ${FIRST_LOAD_BUDGET / 1024} KB)`,
    );
    expect(total).toBeGreaterThan(10 * 1024);
    expect(total).toBeLessThanOrEqual(FIRST_LOAD_BUDGET);
  });
});

describe('The API the console is built on', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });

  afterAll(() => t.close());

  it('GET /api/v0/me says who the key is, its organization, role and credential, and what the rules let them do', async () => {
    const owner = await createUser(t, Role.Owner);
    const organization = { id: owner.organizationId, slug: owner.organizationSlug };
    const member = await createUser(t, Role.Member, organization);
    const guest = await createUser(t, Role.Guest, organization);
    const me = (user: typeof owner) =>
      t
        .http()
        .get('/api/v0/me')
        .set(user.auth)
        .expect(200)
        .then((res) => res.body as Record<string, unknown>);

    expect(await me(member)).toEqual({
      user: { id: member.userId, email: member.email, name: 'A member', role: 'member' },
      organization: { id: organization.id, slug: organization.slug, name: `Org ${organization.slug}` },
      credential: { kind: 'api_key', apiKeyId: member.apiKeyId },
      can: { createApiKeys: true, manageOrganizationApiKeys: false },
    });
    expect((await me(owner)).can).toEqual({ createApiKeys: true, manageOrganizationApiKeys: true });
    expect((await me(guest)).can).toEqual({ createApiKeys: true, manageOrganizationApiKeys: false });

    await t
      .http()
      .patch('/api/v0/organization/enterprise-controls')
      .set(owner.auth)
      .send({ settings: { restrictApiKeyCreationToManagers: true } })
      .expect(200);
    expect((await me(guest)).can).toEqual({ createApiKeys: false, manageOrganizationApiKeys: false });
    expect((await me(member)).can).toEqual({ createApiKeys: false, manageOrganizationApiKeys: false });
    expect((await me(owner)).can).toEqual({ createApiKeys: true, manageOrganizationApiKeys: true });
    // And the API agrees.
    expect((await t.http().post('/settings/api-keys').set(guest.auth).send({ name: 'x' })).status).toBe(403);
  });

  it('the OpenAPI document the console is typed from, written without a database, is the one the server publishes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
    try {
      const out = join(dir, 'openapi.json');
      const run = spawnSync(process.execPath, [join(ROOT, 'dist', 'tools', 'export-openapi.js'), out], { encoding: 'utf8', timeout: 30_000 });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const exported = JSON.parse(readFileSync(out, 'utf8')) as { paths: object; components: object; info: object };
      const published = (await t.http().get('/docs-json').expect(200)).body as typeof exported;
      expect(exported.paths).toEqual(published.paths);
      expect(exported.components).toEqual(published.components);
      expect(exported.info).toEqual(published.info);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('GET /api/v0/me answers 401 without a working key', async () => {
    expect((await t.http().get('/api/v0/me')).status).toBe(401);
    const user = await createUser(t, Role.Member);
    await t.http().delete(`/settings/api-keys/${user.apiKeyId}`).set(user.auth).expect(200);
    expect((await t.http().get('/api/v0/me').set(user.auth)).status).toBe(401);
  });
});

/** A GET as bytes on the wire: supertest (and fetch) would decompress a gzip answer. */
function raw(t: TestApp, path: string, headers: Record<string, string>): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  const { port } = t.app.getHttpServer().address() as AddressInfo;
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, resolve, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppConfig } from '../../config/app-config';
import { REQUEST_ID_HEADER } from './request-id';
import { keepsItsOwnCaching } from './security-headers';

/** Where `npm run build` puts the console (web/ built by Vite); the same path from src/ and from dist/. */
export const CONSOLE_DIR = resolve(__dirname, '..', '..', '..', 'dist', 'web');

/** Where index.html carries the nonce that lets the console's own injected `<style>` elements apply. */
const NONCE_PLACEHOLDER = '{{csp-nonce}}';

/** Paths that are never the console's, whatever the client accepts: the API, the docs, the probes, the assets. */
const NOT_CONSOLE = /^\/(api(\/|$)|docs($|[-/])|healthz$|livez$|assets\/)/;

/** Vite names every file under assets/ by its content's hash: a URL there never changes meaning. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

interface Asset {
  body: Buffer;
  /** Only when it saves something. */
  gzip?: Buffer;
  type: string;
  cacheControl: string;
}

/**
 * Content negotiation on the paths the console shares with the API (`GET /settings/api-keys` is both the spec's
 * endpoint and the console's page): a GET or HEAD whose `Accept` names `text/html` with a quality above zero and
 * at least that of `application/json` is a browser navigation and gets the console. Everything else, `*\/*`, no
 * Accept, `application/json`, gets the API. Browsers send `text/html,...` for navigations and `*\/*` for fetch().
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  let html = -1;
  let json = -1;
  for (const range of accept.toLowerCase().split(',')) {
    const [type, ...parameters] = range.split(';').map((part) => part.trim());
    const quality = parameters.find((parameter) => parameter.startsWith('q='));
    const q = quality === undefined ? 1 : Number(quality.slice(2));
    if (!Number.isFinite(q)) continue;
    if (type === 'text/html') html = Math.max(html, q);
    else if (type === 'application/json') json = Math.max(json, q);
  }
  return html > 0 && html >= json;
}

/**
 * The web console (web/, built into dist/web), served by this server: index.html for every browser navigation
 * outside the API's own paths (the console's router then shows the page, or its 404 page), the hashed assets with
 * a year's immutable caching, gzip when the client takes it. Files are read once, at start.
 */
export class WebConsole {
  private constructor(
    private readonly index: string[],
    private readonly assets: Map<string, Asset>,
    private readonly policy: (nonce: string) => string,
  ) {}

  /** Null when the console was not built (a server built without its dev dependencies): the API works alone. */
  static load(config: AppConfig, dir = CONSOLE_DIR): WebConsole | null {
    const indexFile = join(dir, 'index.html');
    if (!existsSync(indexFile)) return null;
    const assets = new Map<string, Asset>();
    const visit = (folder: string) => {
      for (const entry of readdirSync(folder, { withFileTypes: true })) {
        if (entry.name.startsWith('.')) continue;
        const path = join(folder, entry.name);
        if (entry.isDirectory()) {
          visit(path);
          continue;
        }
        const url = `/${relative(dir, path).split(sep).join('/')}`;
        if (url === '/index.html' || !statSync(path).isFile()) continue;
        const body = readFileSync(path);
        const type = TYPES[extname(path)] ?? 'application/octet-stream';
        const compressed = /^(text|application\/json|image\/svg)/.test(type) ? gzipSync(body, { level: 9 }) : undefined;
        assets.set(url, {
          body,
          gzip: compressed && compressed.length < body.length ? compressed : undefined,
          type,
          cacheControl: url.startsWith('/assets/') ? IMMUTABLE : 'no-cache',
        });
      }
    };
    visit(dir);
    const index = readFileSync(indexFile, 'utf8').split(NONCE_PLACEHOLDER);
    return new WebConsole(index, assets, (nonce) => consolePolicy(config, nonce));
  }

  static built(dir = CONSOLE_DIR): boolean {
    return existsSync(join(dir, 'index.html'));
  }

  /** Call before any hook that needs credentials: a navigation is answered before them. */
  install(fastify: FastifyInstance): void {
    fastify.addHook('onRequest', (request, reply, done) => {
      if (!this.isNavigation(request)) return done();
      // Answered here: a hook that sends does not call done.
      this.sendIndex(request, reply);
    });
    for (const url of this.assets.keys()) {
      fastify.get(url, { config: { public: true } }, (request, reply) => this.sendAsset(request, reply, url));
    }
    // A hashed file that no longer exists (an old tab after a deploy): the API's JSON 404, not index.html.
    fastify.get('/assets/*', { config: { public: true } }, (_request, reply) => reply.callNotFound());
  }

  private isNavigation(request: FastifyRequest): boolean {
    if (request.method !== 'GET' && request.method !== 'HEAD') return false;
    const path = request.url.split('?')[0];
    return !NOT_CONSOLE.test(path) && prefersHtml(request.headers.accept);
  }

  private sendIndex(request: FastifyRequest, reply: FastifyReply): FastifyReply {
    // A fresh nonce per answer, for the `<style>` elements the dialog's scroll lock injects (no 'unsafe-inline').
    const nonce = randomBytes(16).toString('base64');
    keepsItsOwnCaching(request);
    return reply
      .code(200)
      .type('text/html; charset=utf-8')
      .headers({
        'cache-control': 'no-cache',
        // The same URL answers JSON to API clients.
        vary: 'Accept',
        'content-security-policy': this.policy(nonce),
        'referrer-policy': 'same-origin',
        [REQUEST_ID_HEADER]: request.id,
      })
      .send(this.index.join(nonce));
  }

  private sendAsset(request: FastifyRequest, reply: FastifyReply, url: string): FastifyReply {
    const asset = this.assets.get(url)!;
    const gzip = asset.gzip && /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
    reply.type(asset.type).header('cache-control', asset.cacheControl).header('vary', 'Accept-Encoding');
    if (gzip) reply.header('content-encoding', 'gzip');
    return reply.send(gzip ? asset.gzip : asset.body);
  }
}

/**
 * The console's Content-Security-Policy: its own scripts and styles only (no inline script, no inline style but
 * the nonce's), its API on this server and the configured BASE_URL/APP_URL origins, never framed.
 */
function consolePolicy(config: AppConfig, nonce: string): string {
  const apiOrigins = [...new Set([config.baseUrl, config.appUrl].map((url) => new URL(url).origin))];
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self' ${apiOrigins.join(' ')}`,
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}

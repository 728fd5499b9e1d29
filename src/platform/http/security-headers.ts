import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppConfig } from '../../config/app-config';
import { edgeConfigOf } from './route-config';

/** On every answer; set directly where the onSend hook does not run (errors before routing, malformed HTTP). */
export const ALWAYS = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' } as const;

/** Answers that set their own Cache-Control and CSP (the web console's index.html, on any path). */
const OWN_CACHING = new WeakSet<FastifyRequest>();

export function keepsItsOwnCaching(request: FastifyRequest): void {
  OWN_CACHING.add(request);
}

/**
 * What every response says about itself, set in one onSend hook (errors from the request edge included):
 * - `X-Content-Type-Options: nosniff` everywhere: a JSON body is never run as a script or rendered as HTML.
 * - `Cache-Control: no-store` everywhere, public JSON too: an authenticated answer must never sit in a shared or
 *   browser cache, and a cached `/healthz` or `/livez` would hide the state it reports. Only the public docs'
 *   static files (Swagger UI's scripts and styles, which say `public, max-age=0` themselves) keep their own.
 * - A Content-Security-Policy on HTML (the /docs page): scripts from this origin only (Swagger UI's init script is
 *   a file, not inline), no plugins, no framing, no base or form targets elsewhere. Styles allow inline: the page
 *   carries `<style>` blocks and `style` attributes, and styles cannot run code. `connect-src` names the API's own
 *   addresses, which "Try it out" calls.
 * - The web console (web-console.ts) sets its own: its hashed assets are public and immutable (public routes),
 *   its index.html `no-cache` with a stricter policy (styles by nonce, no 'unsafe-inline'), on any path.
 */
export function installSecurityHeaders(fastify: FastifyInstance, config: AppConfig): void {
  const csp = contentSecurityPolicy(config);
  // Callback-style hooks here and in the other per-request hooks: an async hook costs a promise on every request.
  fastify.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void) => {
    reply.header('x-content-type-options', ALWAYS['x-content-type-options']);
    const own = OWN_CACHING.has(request);
    if (!(reply.hasHeader('cache-control') && (own || edgeConfigOf(request).public))) reply.header('cache-control', ALWAYS['cache-control']);
    if (String(reply.getHeader('content-type') ?? '').startsWith('text/html') && !own) reply.header('content-security-policy', csp);
    done(null, payload);
  });
}

function contentSecurityPolicy(config: AppConfig): string {
  const apiOrigins = [...new Set([config.baseUrl, config.appUrl].map((url) => new URL(url).origin))];
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self' ${apiOrigins.join(' ')}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}

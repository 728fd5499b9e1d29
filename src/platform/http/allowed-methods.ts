import type { FastifyInstance } from 'fastify';

interface KnownPath {
  pattern: RegExp;
  methods: Set<string>;
}

/** The order methods are listed in `Allow`. */
const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** `/api/v0/sessions/:sessionId` as a regular expression over concrete paths (`*` matches the rest). */
function patternOf(url: string): RegExp {
  const source = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/**
 * The methods each route path answers, gathered as routes are added (install before
 * NestFactory.create), so that a known path asked with another method answers 405 with `Allow`
 * instead of 404. HEAD is listed wherever GET is (Fastify answers it).
 */
export class AllowedMethods {
  private readonly paths = new Map<string, KnownPath>();

  static install(fastify: FastifyInstance): AllowedMethods {
    const allowed = new AllowedMethods();
    fastify.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      allowed.add(route.url, methods);
    });
    return allowed;
  }

  add(url: string, methods: string[]): void {
    const known = this.paths.get(url) ?? { pattern: patternOf(url), methods: new Set<string>() };
    for (const method of methods) known.methods.add(method.toUpperCase());
    if (known.methods.has('GET')) known.methods.add('HEAD');
    this.paths.set(url, known);
  }

  /** The methods of the routes matching this path (no query), in a stable order; empty when none does. */
  of(path: string): string[] {
    const methods = new Set<string>();
    for (const known of this.paths.values()) if (known.pattern.test(path)) for (const method of known.methods) methods.add(method);
    return [...methods].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  }
}

const rank = (method: string) => {
  const index = ORDER.indexOf(method);
  return index === -1 ? ORDER.length : index;
};

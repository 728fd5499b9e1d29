import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import type { Response, Test } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { AppConfig } from '../../src/config/app-config';
import { buildOpenApiDocument } from '../../src/platform/http/openapi-document';

/**
 * The published OpenAPI document as an oracle for every answer a test receives: the status must be one the
 * operation lists, and a JSON body must match the schema documented for that status. `startTestApp`'s `http()`
 * applies it to every request (see `checkedAgent`); a test reading answers with plain `fetch` calls
 * `t.oracle().checkResponse(...)` itself.
 */

type Json = Record<string, unknown>;
type Headers = Record<string, string | string[] | undefined>;

interface MediaType {
  schema?: unknown;
}
interface DocumentedResponse {
  content?: Record<string, MediaType>;
}
interface Operation {
  responses: Record<string, DocumentedResponse>;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
  components?: Json;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

interface Route {
  template: string;
  pattern: RegExp;
  item: Record<string, unknown>;
}

const pointer = (...segments: string[]) => segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** `application/json; charset=utf-8` → `application/json`. */
const mediaTypeOf = (headers: Headers): string | undefined => {
  const value = headers['content-type'];
  const type = (Array.isArray(value) ? value[0] : value)?.split(';')[0].trim().toLowerCase();
  return type || undefined;
};

const isJson = (type: string | undefined) => type !== undefined && /^application\/([\w.-]+\+)?json$/.test(type);

/** The first characters of a body, for a failure message. */
function excerpt(body: unknown): string {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return text === undefined ? '(none)' : text.length > 500 ? `${text.slice(0, 500)}… (${text.length} characters)` : text;
}

/** What a route that did not match answers (the filter's `route_not_found`): the router's 404, not an operation's. */
function isRouteNotFound(status: number, body: unknown): boolean {
  if (status !== 404 || body === null || typeof body !== 'object') return false;
  const { metadata, detail } = body as { metadata?: { code?: unknown }; detail?: unknown };
  // The analytics body has no metadata: its detail says the same.
  return metadata?.code === 'route_not_found' || (typeof detail === 'string' && detail.startsWith('No route matches '));
}

/**
 * What the server answers before it routes a request (a malformed URL, headers too large, a request too slow): the same
 * whatever the method, so a method the path does not have may get it instead of its 405.
 */
function isAnsweredBeforeRouting(body: unknown): boolean {
  const code = (body as { metadata?: { code?: unknown } } | null)?.metadata?.code;
  return code === 'malformed_url' || code === 'malformed_request' || code === 'request_timeout';
}

export class OpenApiOracle {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, allowUnionTypes: true });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly routes: Route[];

  constructor(readonly document: OpenApiDocument) {
    this.ajv.addSchema({ ...structuredClone(document), $id: 'openapi' } as Json);
    // Formats the oracle checks by their own definition, independent of the server's checker. The URL formats are
    // the server's rules (docs/api.md) and are not repeated here.
    this.ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
    this.ajv.addFormat('lowercase-uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    this.ajv.addFormat('date', /^\d{4}-\d{2}-\d{2}$/);
    this.ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i);
    this.ajv.addFormat('email', /^[^\s@]+@[^\s@]+$/);
    for (const format of ['uri', 'http-base-url', 'repository-url', 'ip-or-cidr']) this.ajv.addFormat(format, true);
    // Literal paths before templated ones, so `/history` is not read as `/{revision}`.
    this.routes = Object.entries(document.paths)
      .map(([template, item]) => ({
        template,
        item,
        pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
      }))
      .sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
  }

  /** The documented path template a request path falls under, if any. */
  route(path: string): Route | undefined {
    return this.routes.find((route) => route.pattern.test(path));
  }

  /**
   * Throws, naming the operation, when the answer is not one the document describes. Not judged: paths the
   * document does not hold (the console, /docs) and the router's 404 for a route that does not exist. A method
   * the path does not have must answer 405 in the path's error body, as the document's description promises.
   */
  checkResponse(method: string, url: string, status: number, headers: Headers, body: unknown): void {
    const path = new URL(url, 'http://x').pathname;
    const route = this.route(path);
    if (!route || isRouteNotFound(status, body)) return;
    const verb = method.toLowerCase();
    // Fastify answers HEAD wherever there is a GET, without a body.
    const documented = verb === 'head' && !route.item.head ? 'get' : verb;
    const operation = route.item[documented] as Operation | undefined;
    const request = `${method.toUpperCase()} ${url.replace(/^https?:\/\/[^/]+/, '')}`;
    const fail = (what: string, why: string, schema?: string): never => {
      throw new Error(`OpenAPI oracle: ${what}: ${why}\n  request: ${request}\n  body: ${excerpt(body)}${schema ? `\n  schema: ${schema}` : ''}`);
    };
    if (!operation) {
      const what = `${method.toUpperCase()} ${route.template} (not an operation of the document)`;
      if (isAnsweredBeforeRouting(body)) return;
      if (status !== 405) fail(what, `answered ${status}; the document promises 405 for a method a path does not have`);
      const errorRef = this.errorSchemaOf(route);
      if (errorRef && body !== undefined) this.validate(errorRef, body, (why) => fail(`${what} 405`, why, errorRef));
      return;
    }
    const what = `${documented.toUpperCase()} ${route.template} ${status}`;
    const response = operation.responses[String(status)] ?? operation.responses.default;
    if (!response) fail(what, `the document does not list ${status} (it lists ${Object.keys(operation.responses).join(', ')})`);
    // Other answers (event streams, NDJSON, the console's HTML on its own routes) are judged by status alone.
    const type = mediaTypeOf(headers);
    if (verb === 'head' || body === undefined || !isJson(type)) return;
    if (!response.content?.[type!]) fail(what, `answered ${type}; the document gives ${Object.keys(response.content ?? {}).join(', ') || 'no body'}`);
    if (response.content![type!].schema === undefined) return;
    const key = operation.responses[String(status)] ? String(status) : 'default';
    const ref = `openapi#/${pointer('paths', route.template, documented, 'responses', key, 'content', type!, 'schema')}`;
    this.validate(ref, body, (why) => fail(what, why, ref));
  }

  private validate(ref: string, body: unknown, fail: (why: string) => void): void {
    let validate = this.validators.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: ref });
      this.validators.set(ref, validate);
    }
    if (!validate(body)) fail(`the body does not match its schema:\n    ${describe(validate.errors ?? []).join('\n    ')}`);
  }

  /** The error body schema of a path (what its operations answer 4xx with). */
  private errorSchemaOf(route: Route): string | undefined {
    for (const method of METHODS) {
      const operation = route.item[method] as Operation | undefined;
      for (const [status, response] of Object.entries(operation?.responses ?? {})) {
        if (status.startsWith('4') && response.content?.['application/json']?.schema)
          return `openapi#/${pointer('paths', route.template, method, 'responses', status, 'content', 'application/json', 'schema')}`;
      }
    }
    return undefined;
  }
}

/** Ajv's errors as lines, at most ten (a union's branches can give dozens). */
function describe(errors: ErrorObject[]): string[] {
  const lines = errors.slice(0, 10).map((e) => `${e.instancePath || '(root)'} ${e.message ?? e.keyword}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
  return errors.length > 10 ? [...lines, `… and ${errors.length - 10} more`] : lines;
}

let shared: OpenApiOracle | undefined;

/**
 * The oracle for a running app, from the document it publishes at /docs-json (the same function). Built once per
 * test file: the app's modules and routes do not depend on its settings, which change only the document's
 * `servers`. Built when the first app starts, not on its first answer, so that no test pays for it between two
 * requests whose timing it tests.
 */
export function oracleOf(app: NestFastifyApplication, config: AppConfig): OpenApiOracle {
  shared ??= new OpenApiOracle(buildOpenApiDocument(app, config) as unknown as OpenApiDocument);
  return shared;
}

/** What a supertest answer carried as a body: parsed JSON, other text, or undefined when there was none. */
export function answerBodyOf(res: Response): unknown {
  if (res.status === 204 || res.status === 304) return undefined;
  if (typeof res.text === 'string') {
    if (res.text === '') return undefined;
    return isJson(mediaTypeOf(res.headers)) ? (res.body as unknown) : res.text;
  }
  return Buffer.isBuffer(res.body) && res.body.length === 0 ? undefined : (res.body as unknown);
}

/**
 * Checks the answer once the test's own `.expect(...)`s have passed, so a wrong status reads as the test's own
 * failure first. A failure points at the line that sent the request.
 */
function checked(test: Test, oracle: OpenApiOracle): Test {
  const sentFrom = new Error()
    .stack!.split('\n')
    .slice(1)
    .filter((frame) => !frame.includes(__filename));
  const end = test.end.bind(test);
  test.end = (callback) =>
    end((error, res) => {
      if (!error && res) {
        try {
          oracle.checkResponse(test.method, test.url, res.status, res.headers, answerBodyOf(res));
        } catch (failure) {
          (failure as Error).stack = [(failure as Error).message, ...sentFrom].join('\n');
          return callback?.(failure, res);
        }
      }
      return callback?.(error, res);
    });
  return test;
}

/** A supertest agent whose every answer is checked against the document, and the way out of that. */
export type CheckedAgent = TestAgent & {
  /**
   * The same requests, unchecked: for a test that must send what the document does not describe. Say why;
   * keep it rare (docs/testing.md lists the uses).
   */
  unchecked(why: string): TestAgent;
};

export function checkedAgent(agent: TestAgent, oracle: OpenApiOracle): CheckedAgent {
  const wrapped = Object.fromEntries(
    Object.entries(agent).map(([name, value]) => [
      name,
      typeof value === 'function' ? (url: string) => checked(value.call(agent, url) as Test, oracle) : value,
    ]),
  );
  return Object.assign(wrapped, {
    unchecked: (why: string) => {
      if (!why.trim()) throw new Error('unchecked(why): say why the answer cannot be checked against the document');
      return agent;
    },
  }) as unknown as CheckedAgent;
}

import { clientErrorBody } from '../logging/access-log';
import { errorBody, errorFlavourOf } from './error-body';
import { ERROR_SCHEMAS, ErrorExample, EXAMPLE_EXTENSIONS, PASSED_ON, PROBE_EXTENSION, V0_ERROR } from './openapi';

/**
 * Answers every operation can give whatever its controller says, added to the document so that Swagger UI
 * lists each status a route can answer, and an example error body for every error response, built by the
 * same `errorBody` the exception filter answers with (so the examples cannot drift from real answers).
 *
 * Added where the operation does not document the status itself:
 * - every operation but the probes: **503** `database_unavailable` or `storage_full` with `Retry-After` (ApiExceptionFilter);
 * - every operation: **400**, for a URL with a bad percent-escape or bytes that are not UTF-8 (`malformed_url`,
 *   answered before routing) and a query parameter the operation does not take (`validation_failed`;
 *   NoUndeclaredQueryGuard and the query schemas); an operation's own 400 says so too;
 * - authenticated operations: **403** `computer_token_not_accepted` (the guard refuses agent tokens outside
 *   the agent channel; AuthGuard) and **429** `rate_limited` (every counted request; RateLimitGuard); public ones
 *   but the load balancer's probes: **429** (the anonymous limit);
 * - operations with a request body: **400** (malformed JSON, `json_too_deep`), **408** `request_timeout` (a body
 *   still arriving after `REQUEST_TIMEOUT_MS`: Node answers it, in the v0 body whatever the path), **413**
 *   `payload_too_large` (`BODY_LIMIT_BYTES`, or `MESSAGE_BODY_LIMIT_BYTES` on message routes) and **415**
 *   `unsupported_media_type`.
 *
 * The example of an error answer is the error the operation's module names for its status beside the route
 * (`ApiErrorExamples`, openapi.ts), else the platform's own for the answers above (`PLATFORM_EXAMPLES`): this file knows
 * no module's paths or codes.
 *
 * Not added: 405 (a method the path has no operation for; the document's description says it once), 414 (no path
 * the server accepts is too long for its router: `maxParamLength` is Node's header size), and what Node refuses
 * before any path is read (431, or 400 `malformed_request`), which docs/api.md describes.
 */
type Json = { [key: string]: unknown };
type Operation = {
  [extension: `x-${string}`]: unknown;
  security?: unknown[];
  requestBody?: unknown;
  parameters?: Array<{ name: string; in: string }>;
  responses: Record<string, Json>;
  description?: string;
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
/** The error bodies' schemas (src/platform/http/openapi.ts); other answers (health's) have examples of their own. */
const ERROR_SCHEMA_REFS = new Set(Object.values(ERROR_SCHEMAS).map((schema) => schema.$ref));
const isErrorSchema = (schema: unknown) => ERROR_SCHEMA_REFS.has((schema as { $ref?: string } | undefined)?.$ref ?? '');

/** The examples of the answers every operation may give, where its module names no error for the status. */
const PLATFORM_EXAMPLES: Record<string, ErrorExample> = {
  '400': {
    code: 'validation_failed',
    detail: 'limit: must be a whole number from 1 to 100',
    metadata: { errors: [{ field: 'limit', message: 'must be a whole number from 1 to 100' }] },
  },
  '401': { code: 'missing_credentials', detail: 'Send an API key or JWT as: Authorization: Bearer <token>.' },
  '403': {
    code: 'computer_token_not_accepted',
    detail: "A computer's agent token works only on the agent channel (/api/v0/agent); use an API key or JWT here.",
  },
  '413': {
    code: 'payload_too_large',
    detail: "The request body is larger than this operation's limit of 1048576 bytes.",
    metadata: { limitBytes: 1048576 },
  },
  '415': { code: 'unsupported_media_type', detail: 'Request bodies must be JSON: send Content-Type: application/json.' },
  '503': { code: 'database_unavailable', detail: 'The database does not answer at the moment; try again shortly.' },
  '429': {
    code: 'rate_limited',
    detail: 'Too many requests: the credential limit is 1200 a minute. Retry after 42 s.',
    metadata: { policy: 'credential', limit: 1200, windowSeconds: 60, retryAfterSeconds: 42 },
  },
};

/**
 * The errors the operation's module names for its statuses (`ApiErrorExamples`), by status, taken off the operation:
 * its own or its controller's, else a shared decorator's.
 */
function namedErrors(operation: Operation): Record<string, ErrorExample> {
  const named: Record<string, ErrorExample> = {};
  for (const prefix of [EXAMPLE_EXTENSIONS.sharedError, EXAMPLE_EXTENSIONS.error]) {
    for (const key of Object.keys(operation) as Array<keyof Operation>) {
      if (!key.startsWith(prefix)) continue;
      named[key.slice(prefix.length)] = operation[key] as ErrorExample;
      delete operation[key];
    }
  }
  return named;
}

/** What any operation but `/livez` answers 503 for, whatever its own 503 says. */
const ANY_OPERATION_503 =
  'Any operation: the database does not answer (`database_unavailable`), or its disk is full (`storage_full`: a write changed nothing; reads go on); try again after `Retry-After` seconds.';

/** What any operation answers 400 for, whatever its own 400 says. */
const ANY_OPERATION_400 =
  'Any operation: a URL with a bad percent-escape or bytes that are not UTF-8 (`malformed_url`), or a query parameter it does not take (`validation_failed`, naming it).';

const ADDED: Record<string, string> = {
  '400':
    'The body is not well-formed JSON, nests deeper than `JSON_MAX_DEPTH` (`json_too_deep`), or holds more than `JSON_MAX_VALUES` values (`json_too_many_values`).',
  '403': "A computer's agent token (`cpt_...`): it works only on the agent channel (`computer_token_not_accepted`).",
  '408': 'The body was still arriving after `REQUEST_TIMEOUT_MS` (`request_timeout`, in the v0 body on every path); the connection is closed.',
  '431': "Any operation: the request's headers are larger than Node accepts (16 KiB; `malformed_request`, in the v0 body on every path).",
  '413':
    'The body is larger than this operation accepts (`payload_too_large`, `metadata.limitBytes`): `BODY_LIMIT_BYTES`, or `MESSAGE_BODY_LIMIT_BYTES` for messages and the relay.',
  '415': 'The body is not JSON (`Content-Type: application/json` or `application/merge-patch+json`): `unsupported_media_type`.',
  '429': 'Over a rate limit (`rate_limited`, `metadata.policy`): wait `Retry-After` seconds.',
};

const REQUEST_ID = 'req_4f0c2d1e9b7a4c55a1d3e2f1a0b9c8d7';

/** The 400 of a query parameter the operation does not take, as NoUndeclaredQueryGuard and the query schemas answer it. */
function undeclaredQueryExample(path: string, operation: Operation): unknown {
  const accepted = (operation.parameters ?? []).filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name);
  const message = `is not an accepted query parameter (${accepted.length === 0 ? 'this operation takes no query parameters' : `accepted: ${accepted.join(', ')}`})`;
  return errorBody(errorFlavourOf(path), 400, `q: ${message}`, REQUEST_ID, { code: 'validation_failed', errors: [{ field: 'q', message }] });
}

/** The 429 of a request without a credential, as RateLimits answers it. */
function anonymousLimitExample(path: string): unknown {
  const detail = 'Too many requests: the anonymous limit is 120 a minute. Retry after 42 s.';
  return errorBody(errorFlavourOf(path), 429, detail, REQUEST_ID, {
    code: 'rate_limited',
    policy: 'anonymous',
    limit: 120,
    windowSeconds: 60,
    retryAfterSeconds: 42,
  });
}

/** Adds the always-possible answers and an example to each error answer; the document is changed in place. */
export function completeResponses(document: { paths: object }): void {
  for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
    for (const method of METHODS) {
      const operation = item[method] as Operation | undefined;
      if (!operation?.responses) continue;
      // Nest shares a controller's response objects between its operations: each operation gets copies of its own.
      operation.responses = structuredClone(operation.responses);
      // The path decides which error body is answered (errorFlavourOf), whatever schema a decorator shared by every
      // module names (@Authenticated's 401 and 403 name the v0 body): so the document says what the path answers.
      const errorSchema = ERROR_SCHEMAS[errorFlavourOf(path)];
      for (const response of Object.values(operation.responses)) {
        const media = (response.content as Record<string, Json> | undefined)?.['application/json'];
        if (media && isErrorSchema(media.schema)) media.schema = errorSchema;
      }
      const named = namedErrors(operation);
      const errorContent = operation.responses['401']?.content ?? operation.responses['400']?.content ?? { 'application/json': { schema: errorSchema } };
      const add = (status: string, description = ADDED[status], content = errorContent, example?: unknown) => {
        if (operation.responses[status]) return;
        const copy = structuredClone(content) as Record<string, Json>;
        for (const media of Object.values(copy)) delete media.example;
        if (example) copy['application/json'].example = example;
        operation.responses[status] = { description, content: copy };
      };
      // A public operation has `security: []` (openapi-document.ts).
      const needsCredential = (operation.security?.length ?? 0) > 0;
      // A load balancer's probe is never counted against a rate limit (`@Public({ probe: true })`).
      const probe = operation[PROBE_EXTENSION] === true;
      delete operation[PROBE_EXTENSION];
      if (needsCredential || !probe) add('429', ADDED['429'], errorContent, needsCredential ? undefined : anonymousLimitExample(path));
      if (needsCredential) add('403');
      // Whatever the operation documents, a body sent with any method but GET is read, held to the limits and parsed.
      if (operation.requestBody || method !== 'get') {
        for (const status of ['400', '413', '415']) add(status);
        add('408', ADDED['408'], { 'application/json': { schema: V0_ERROR } }, clientErrorBody(408, REQUEST_ID));
      }
      add('431', ADDED['431'], { 'application/json': { schema: V0_ERROR } }, clientErrorBody(431, REQUEST_ID));
      add('400', ANY_OPERATION_400, errorContent, undeclaredQueryExample(path, operation));
      // Liveness needs no database; every other operation reads or writes it (readiness documents its own 503).
      if (!probe) add('503', ANY_OPERATION_503);
      for (const [status, any] of probe
        ? [['400', ANY_OPERATION_400]]
        : [
            ['400', ANY_OPERATION_400],
            ['503', ANY_OPERATION_503],
          ]) {
        const own = operation.responses[status];
        if (!String(own.description).endsWith(any)) own.description = `${String(own.description ?? '')} ${any}`.trim();
      }
      operation.responses = Object.fromEntries(Object.entries(operation.responses).sort(([a], [b]) => a.localeCompare(b)));
      for (const [status, response] of Object.entries(operation.responses)) {
        const media = (response.content as Record<string, Json> | undefined)?.['application/json'];
        const error = Number(status) >= 400 ? (named[status] ?? PLATFORM_EXAMPLES[status]) : undefined;
        if (!media || !error || !isErrorSchema(media.schema) || media.example !== undefined || media.examples !== undefined) continue;
        const { code, detail, metadata } = error;
        media.example = errorBody(errorFlavourOf(path), Number(status), detail, REQUEST_ID, { code, ...metadata });
      }
      // A relay (an operation with a `default` answer) passes the other server's statuses on with its bodies: any error
      // status it lists may carry this server's error body or that server's own.
      if (operation.responses.default) {
        for (const [status, response] of Object.entries(operation.responses)) {
          const media = (response.content as Record<string, Json> | undefined)?.['application/json'];
          if (Number(status) >= 400 && media?.schema) media.schema = { anyOf: [media.schema, PASSED_ON['application/json'].schema] };
        }
      }
    }
  }
}

/** Puts each operation's request example (`ApiRequestExample`, beside its route) on its JSON body. */
export function addRequestExamples(document: { paths: object }): void {
  for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
    for (const method of METHODS) {
      const operation = item[method] as (Operation & { requestBody?: { content?: Record<string, Json> } }) | undefined;
      if (!operation) continue;
      const example = operation[EXAMPLE_EXTENSIONS.request];
      if (example === undefined) continue;
      delete operation[EXAMPLE_EXTENSIONS.request];
      const media = operation.requestBody?.content?.['application/json'];
      if (!media) throw new Error(`OpenAPI: no JSON body on ${method} ${path} to put an example on`);
      media.example = example;
    }
  }
}

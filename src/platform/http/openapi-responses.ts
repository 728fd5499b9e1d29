import { clientErrorBody } from '../logging/access-log';
import { errorBody, errorFlavourOf } from './error-body';
import { ERROR_SCHEMAS, PASSED_ON, V0_ERROR } from './openapi';

/**
 * Answers every operation can give whatever its controller says, added to the document so that Swagger UI
 * lists each status a route can answer, and an example error body for every error response, built by the
 * same `errorBody` the exception filter answers with (so the examples cannot drift from real answers).
 *
 * Added where the operation does not document the status itself:
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
 * Not added: 405 (a method the path has no operation for; the document's description says it once), 414 (no path
 * the server accepts is too long for its router: `maxParamLength` is Node's header size), and what Node refuses
 * before any path is read (431, or 400 `malformed_request`), which docs/api.md describes.
 */
type Json = { [key: string]: unknown };
type Operation = {
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

const ID = '0196f1d2-7c3a-7e0b-9f41-3a5c2b8d9e10';
const COMPUTER_TOKEN_REFUSED = {
  code: 'computer_token_not_accepted',
  detail: "A computer's agent token works only on the agent channel (/api/v0/agent); use an API key or JWT here.",
};

/** The error a status stands for in an example, by the path's resource where the code depends on it. */
function exampleError(path: string, method: string, status: number, roleBound: boolean): { code: string; detail: string; metadata?: Json } | undefined {
  const notFound: Array<[RegExp, string, string]> = [
    [/\/history\/\{revision\}$/, 'revision_not_found', "Your organization's controls have no revision 7."],
    [/\/mcp\/\{serverName\}|\/mcp-servers\/\{serverName\}/, 'mcp_server_not_found', 'There is no MCP server "github" in your organization\'s controls.'],
    [/\/models\/\{customModelId\}/, 'custom_model_not_found', 'There is no custom model "custom:acme-llama" in your organization\'s controls.'],
    [/\/members\/\{userId\}\/api-keys$/, 'service_account_not_found', `No service account ${ID} exists in your organization; people create their own keys.`],
    [/\/members\/\{userId\}$/, 'user_not_found', `No user ${ID} exists in your organization.`],
    [/\/api-keys\//, 'api_key_not_found', `No API key ${ID} exists in your organization.`],
    [/\/tool-approvals\/\{approvalId\}$/, 'tool_approval_not_found', `No tool approval ${ID} exists in session ${ID}.`],
    [/\/webhooks\/\{webhookId\}\/deliveries\/\{deliveryId\}/, 'webhook_delivery_not_found', `No delivery ${ID} of webhook ${ID} exists.`],
    [/\/webhooks\/\{webhookId\}/, 'webhook_not_found', `No webhook ${ID} exists in your organization.`],
    [/\/readiness-repositories\/\{repoId\}/, 'repository_not_found', 'Your organization has no report of repository repo_3f9a1c0d5e7b2a4c6d8e.'],
    [/\/computers|\/agent\/claims/, 'computer_not_found', `No computer ${ID} exists in your organization.`],
    [/\/sessions/, 'session_not_found', `No session ${ID} exists in your organization.`],
  ];
  switch (status) {
    case 400:
      if (path.includes('/models/{customModelId}/'))
        return {
          code: 'model_api_mismatch',
          detail: 'Custom model "custom:acme-claude" has provider anthropic: call /api/v0/agent/models/custom:acme-claude/messages, not /chat/completions.',
          metadata: { customModelId: 'custom:acme-claude', provider: 'anthropic', endpoint: 'messages' },
        };
      return {
        code: 'validation_failed',
        detail: 'limit: must be a whole number from 1 to 100',
        metadata: { errors: [{ field: 'limit', message: 'must be a whole number from 1 to 100' }] },
      };
    case 401:
      return { code: 'missing_credentials', detail: 'Send an API key or JWT as: Authorization: Bearer <token>.' };
    case 403:
      if (path.includes('/models/{customModelId}/') || path.includes('/agent/mcp/')) {
        return {
          code: 'agent_token_required',
          detail: "Only a computer's agent token may call this (the agent working on that computer); user API keys and JWTs may not.",
        };
      }
      if (path === '/api/v0/agent/claims') {
        return {
          code: 'computer_work_disabled',
          detail: `Computer ${ID} takes no new work: BYOM computers are turned off for your organization. A turn already running finishes.`,
          metadata: { control: 'byomComputersEnabled', computerId: ID },
        };
      }
      if (path === '/settings/api-keys/{apiKeyId}' || !roleBound) return COMPUTER_TOKEN_REFUSED;
      if (path === '/settings/api-keys' && method === 'post') {
        return {
          code: 'api_key_creation_restricted',
          detail: 'Your organization restricts API key creation to managers and owners (restrictApiKeyCreationToManagers).',
        };
      }
      return {
        code: 'insufficient_role',
        detail: 'This operation requires the owner or manager role; you are a member.',
        metadata: { requiredRoles: ['owner', 'manager'], role: 'member' },
      };
    case 404: {
      const match = notFound.find(([pattern]) => pattern.test(path));
      return match ? { code: match[1], detail: match[2] } : undefined;
    }
    case 409:
      if (path.includes('/mcp-servers/{serverName}/oauth'))
        return {
          code: 'mcp_transport_mismatch',
          detail: 'MCP server "db" is a stdio server: agents start it themselves, and there is nothing to sign in to.',
          metadata: { transport: 'stdio' },
        };
      if (path.includes('/agent/mcp/'))
        return {
          code: 'mcp_transport_mismatch',
          detail: 'MCP server "github" is a http server, not stdio; agents use it through /api/v0/agent/mcp/github (the relay).',
          metadata: { transport: 'http' },
        };
      if (path.endsWith('/cloud'))
        return {
          code: 'model_not_cloud',
          detail: 'Custom model "team-model" has no cloudModelConfig.cloudBaseUrl: agents reach it through the relay, /api/v0/agent/models/team-model.',
          metadata: { customModelId: 'team-model' },
        };
      if (path.includes('/agent/sessions/'))
        return {
          code: 'turn_not_active',
          detail: `Turn ${ID} is not the running turn of session ${ID}: it ended, or its lease ran out and another agent took the work.`,
          metadata: { sessionStatus: 'idle' },
        };
      if (path === '/api/v0/sessions/{sessionId}/messages')
        return {
          code: 'session_archived',
          detail: `Session ${ID} was archived at 2026-11-29T08:00:00.000Z and takes no new messages. Unarchive it first: PATCH its sessionSettings.archivedAt to null.`,
          metadata: { archivedAt: '2026-11-29T08:00:00.000Z' },
        };
      if (path.endsWith('/interrupt'))
        return { code: 'no_running_turn', detail: `Session ${ID} has no running turn to interrupt: it is idle.`, metadata: { sessionStatus: 'idle' } };
      if (path.endsWith('/tool-approvals/{approvalId}'))
        return { code: 'tool_approval_not_pending', detail: `Tool approval ${ID} is allowed: it can no longer be decided.`, metadata: { status: 'allowed' } };
      if (path.endsWith('/retry'))
        return {
          code: 'computer_not_failed',
          detail: `Computer ${ID} is active; only a computer in error can be retried.`,
          metadata: { computerStatus: 'active' },
        };
      if (path === '/api/v0/setup')
        return { code: 'setup_done', detail: 'This server is set up already: an organization exists. Ask its owner for a key, or use the CLI.' };
      if (path === '/api/v0/organization/webhooks')
        return { code: 'too_many_webhooks', detail: 'An organization may have at most 50 webhooks; delete one first.', metadata: { limit: 50 } };
      if (path.endsWith('/redeliver'))
        return { code: 'webhook_disabled', detail: `Webhook ${ID} is disabled; enable it (PATCH enabled: true) before redelivering.` };
      if (path === '/api/v0/organization/members')
        return { code: 'user_exists', detail: 'ada@example.com is already a user of your organization.', metadata: { userId: ID } };
      if (path.startsWith('/api/v0/organization/members/'))
        return { code: 'last_owner', detail: "This is the organization's last owner: make someone else an owner first." };
      if (path === '/api/v0/computers')
        return {
          code: 'quota_exceeded',
          detail: 'Your organization has 100 computers, as many as it may have (COMPUTERS_PER_ORGANIZATION); delete one to create another.',
          metadata: { quota: 'COMPUTERS_PER_ORGANIZATION', limit: 100 },
        };
      return undefined;
    case 410:
      return {
        code: 'event_expired',
        detail:
          'The events after 42 are no longer kept (EVENT_RETENTION_DAYS): the oldest is 1187. Resume after 1186, or from 0, and reconcile what you missed from the objects themselves.',
        metadata: { oldestId: 1187 },
      };
    case 412:
      return {
        code: 'revision_mismatch',
        detail: 'The controls are at revision 3, not 2 as If-Match expects: someone changed them since you read them. Read them again and reapply your change.',
        metadata: { currentRevision: 3 },
      };
    case 413:
      return {
        code: 'payload_too_large',
        detail: "The request body is larger than this operation's limit of 1048576 bytes.",
        metadata: { limitBytes: 1048576 },
      };
    case 415:
      return { code: 'unsupported_media_type', detail: 'Request bodies must be JSON: send Content-Type: application/json.' };
    case 422:
      return {
        code: 'idempotency_key_reused',
        detail: 'Idempotency-Key: this key was already used with a different request; use a new key for a new request.',
      };
    case 429:
      if (path.endsWith('/events'))
        return {
          code: 'too_many_streams',
          detail: 'This credential has already 10 event streams open on this server (EVENT_STREAMS_PER_CREDENTIAL). Close one, or retry after 5 s.',
          metadata: { quota: 'EVENT_STREAMS_PER_CREDENTIAL', limit: 10 },
        };
      return {
        code: 'rate_limited',
        detail: 'Too many requests: the credential limit is 1200 a minute. Retry after 42 s.',
        metadata: { policy: 'credential', limit: 1200, windowSeconds: 60, retryAfterSeconds: 42 },
      };
    case 502:
      if (path.includes('/agent/mcp/'))
        return { code: 'mcp_redirected', detail: 'MCP server "github" answered 302, a redirect; the relay does not follow redirects.' };
      return { code: 'model_answer_invalid', detail: 'The model answered something other than JSON.' };
    case 503:
      if (path.includes('/agent/mcp/')) return { code: 'mcp_unreachable', detail: 'MCP server "github" could not be reached: ECONNREFUSED.' };
      return path.includes('/models/{customModelId}/') || path.includes('enterprise-controls')
        ? {
            code: 'secret_unreadable',
            detail:
              'A stored secret of custom model "custom:acme-llama" cannot be decrypted with SECRETS_KEY; an operator must restore the key it was encrypted with.',
          }
        : { code: 'database_unavailable', detail: 'The database did not answer.' };
    case 504:
      if (path.includes('/agent/mcp/'))
        return { code: 'mcp_timed_out', detail: 'MCP server "github" did not answer within 600000 ms (MODEL_RELAY_TIMEOUT_MS).' };
      return { code: 'model_timed_out', detail: 'The model did not answer within MODEL_RELAY_TIMEOUT_MS (600000 ms).' };
    default:
      return undefined;
  }
}

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

/** The load balancer's probes: public, and never counted against a rate limit. */
const PROBES = new Set(['/healthz', '/livez']);
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
      const errorContent = operation.responses['401']?.content ?? operation.responses['400']?.content ?? { 'application/json': { schema: errorSchema } };
      const roleBound = operation.responses['403'] !== undefined;
      const add = (status: string, description = ADDED[status], content = errorContent, example?: unknown) => {
        if (operation.responses[status]) return;
        const copy = structuredClone(content) as Record<string, Json>;
        for (const media of Object.values(copy)) delete media.example;
        if (example) copy['application/json'].example = example;
        operation.responses[status] = { description, content: copy };
      };
      // A public operation has `security: []` (openapi-document.ts).
      const needsCredential = (operation.security?.length ?? 0) > 0;
      if (needsCredential || !PROBES.has(path)) add('429', ADDED['429'], errorContent, needsCredential ? undefined : anonymousLimitExample(path));
      if (needsCredential) add('403');
      // Whatever the operation documents, a body sent with any method but GET is read, held to the limits and parsed.
      if (operation.requestBody || method !== 'get') {
        for (const status of ['400', '413', '415']) add(status);
        add('408', ADDED['408'], { 'application/json': { schema: V0_ERROR } }, clientErrorBody(408, REQUEST_ID));
      }
      add('431', ADDED['431'], { 'application/json': { schema: V0_ERROR } }, clientErrorBody(431, REQUEST_ID));
      add('400', ANY_OPERATION_400, errorContent, undeclaredQueryExample(path, operation));
      const own400 = operation.responses['400'];
      if (!String(own400.description).endsWith(ANY_OPERATION_400)) own400.description = `${String(own400.description ?? '')} ${ANY_OPERATION_400}`.trim();
      operation.responses = Object.fromEntries(Object.entries(operation.responses).sort(([a], [b]) => a.localeCompare(b)));
      for (const [status, response] of Object.entries(operation.responses)) {
        const media = (response.content as Record<string, Json> | undefined)?.['application/json'];
        const error = Number(status) >= 400 ? exampleError(path, method, Number(status), roleBound) : undefined;
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

/**
 * "Try it out" bodies of the main operations, chosen to succeed against `npm run demo`'s data with the acme owner's
 * key (test/e2e/guide.e2e-spec.ts sends each one). Agent-channel bodies need a `turnId` from a claim, so theirs
 * show the shape only.
 */
export const REQUEST_EXAMPLES: Record<string, unknown> = {
  'post /settings/api-keys': { name: 'laptop' },
  'post /api/v0/sessions': { title: 'Add a health check to the orders API', sessionSettings: { model: 'model-a', reasoningEffort: 'medium' } },
  'patch /api/v0/sessions/{sessionId}': { title: 'Add /healthz to the orders API' },
  'post /api/v0/sessions/{sessionId}/messages': { text: 'Add GET /healthz answering 200 while the database answers, with a test.' },
  'post /api/v0/computers': { name: 'Build box', provider: 'byom', hostId: '6f1c2a4e-8b3d-4e5f-9a7b-1c2d3e4f5a6b', remoteUser: 'ci' },
  'patch /api/v0/computers/{computerId}': { name: 'Build box (rack 2)' },
  'patch /api/v0/organization/enterprise-controls': { settings: { sessionRetentionDays: 90 } },
  'post /api/v0/agent/claims': { waitMs: 1000 },
  'post /api/v0/agent/sessions/{sessionId}/messages': {
    turnId: '0196f1d2-7c3a-7e0b-9f41-3a5c2b8d9e10',
    messages: [{ role: 'assistant', content: [{ type: 'text', text: 'Added GET /healthz and its test; the suite passes.' }] }],
  },
  'post /api/v0/agent/sessions/{sessionId}/end-turn': { turnId: '0196f1d2-7c3a-7e0b-9f41-3a5c2b8d9e10', assistantActiveTimeMs: 5400 },
  'post /api/v0/agent/sessions/{sessionId}/tool-approvals': {
    turnId: '0196f1d2-7c3a-7e0b-9f41-3a5c2b8d9e10',
    toolName: 'Execute',
    toolCallId: 'call_7',
    summary: 'git push origin main',
    input: { command: 'git push origin main' },
  },
};

/** Puts each request example on its operation's JSON body. */
export function addRequestExamples(document: { paths: object }): void {
  for (const [key, example] of Object.entries(REQUEST_EXAMPLES)) {
    const [method, path] = key.split(' ');
    const operation = (document.paths as Record<string, Record<string, { requestBody?: { content?: Record<string, Json> } }>>)[path]?.[method];
    const media = operation?.requestBody?.content?.['application/json'];
    if (!media) throw new Error(`OpenAPI: no JSON body on ${key} to put an example on`);
    media.example = example;
  }
}

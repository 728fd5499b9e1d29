import { NO_EFFECT_KEYWORD } from '../../src/platform/http/no-effect';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020';
import { EVENT_TYPES } from '../../src/modules/events';
import { SECRET_KEYWORD } from '../../src/platform/http/json-schema';
import { Role } from '../../src/modules/auth';
import { createUser } from '../utils/factories';
import { agentOf } from '../utils/fixtures/model-relay';
import { startTestApp, TestApp } from '../utils/test-app';

const ROOT = join(__dirname, '../..');

interface Operation {
  security?: Array<Record<string, string[]>>;
  requestBody?: { content: Record<string, { schema: unknown; example?: unknown }> };
  responses: Record<string, { content?: Record<string, { schema: unknown; example?: unknown }> }>;
}
type Json = Record<string, unknown>;

/** The OpenAPI document is the contract operators read: its decisions must be in it. */
describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: {
    info: { version: string; description: string };
    servers: Array<{ url: string }>;
    paths: Record<string, Record<string, Operation> & { servers?: Array<{ url: string }> }>;
    components: { securitySchemes: Record<string, { type: string; scheme: string }> };
  };

  beforeAll(async () => {
    t = await startTestApp({ BASE_URL: 'https://api.example.test', APP_URL: 'https://app.example.test' });
    doc = (await t.http().get('/docs-json')).body;
  });

  afterAll(() => t.close());

  it('reports the API version 0.1.0 and bearer security', () => {
    expect(doc.info.version).toBe('0.1.0');
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.servers[0].url).toBe('https://api.example.test');
  });

  it('opens on the Authorize step and leaves the rules to the guide, naming files that exist', () => {
    const description = doc.info.description;
    expect(description.indexOf('Authorize')).toBeLessThan(100);
    expect(description.length).toBeLessThan(2500);
    const named = [...description.matchAll(/`(docs\/[a-z-]+\.md)`/g)].map((m) => m[1]);
    expect(named).toEqual(expect.arrayContaining(['docs/getting-started.md', 'docs/api.md', 'docs/security.md']));
    for (const file of named) expect([file, existsSync(join(ROOT, file))]).toEqual([file, true]);
  });

  it('keeps the decisions the spec leaves open in the guide (docs/api.md)', () => {
    const guide = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');
    for (const heading of [
      '## Roles',
      'Token lifetime and JWT issuance',
      'Rate limits',
      'BODY_LIMIT_BYTES',
      '404',
      'metadata.code',
      '## Sessions',
      'Status transitions',
      '## Idempotency',
      'text/plain',
      'Unix ms',
    ]) {
      expect(guide).toContain(heading);
    }
  });

  it('declares OpenAPI 3.1.0 and is a valid 3.1 document', async () => {
    expect((doc as unknown as { openapi: string }).openapi).toBe('3.1.0');
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as unknown as Json);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  const pointer = (...segments: string[]) => '#/' + segments.map((x) => x.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

  /** Every Schema Object, where the document holds one, as [JSON pointer, schema]. */
  const schemas = (): Array<[string, unknown]> => {
    const out: Array<[string, unknown]> = Object.entries((doc.components as unknown as { schemas: Json }).schemas).map(([name, schema]) => [
      pointer('components', 'schemas', name),
      schema,
    ]);
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (method === 'servers') continue;
        const op = operation as Operation & { parameters?: Array<{ name: string; schema?: unknown }> };
        (op.parameters ?? []).forEach((p, i) => p.schema && out.push([pointer('paths', path, method, 'parameters', String(i), 'schema'), p.schema]));
        for (const [type, media] of Object.entries(op.requestBody?.content ?? {}))
          out.push([pointer('paths', path, method, 'requestBody', 'content', type, 'schema'), media.schema]);
        for (const [status, response] of Object.entries(op.responses)) {
          for (const [type, media] of Object.entries(response.content ?? {}))
            out.push([pointer('paths', path, method, 'responses', status, 'content', type, 'schema'), media.schema]);
        }
      }
    }
    return out;
  };

  it('writes every schema in JSON Schema 2020-12 as 3.1 reads it: no nullable, example or boolean exclusive bounds', () => {
    // Strict: a keyword 2020-12 does not know (nullable, example) fails to compile; the OAS vocabulary is allowed.
    const ajv = new Ajv2020({ strict: true, strictTypes: false, allowUnionTypes: true, validateFormats: false });
    ajv.addVocabulary(['discriminator', 'xml', 'externalDocs']);
    // Our published extensions (OpenAPI's `x-` specification extensions): a secret, answered masked; a setting with no effect here.
    ajv.addVocabulary([SECRET_KEYWORD, NO_EFFECT_KEYWORD]);
    ajv.addVocabulary(['openapi', 'info', 'servers', 'paths', 'components', 'tags', 'security']); // the document around the schemas
    ajv.addSchema({ ...structuredClone(doc), $id: 'openapi' } as Json);
    const problems: string[] = [];
    const walk = (value: unknown, where: string): void => {
      if (Array.isArray(value)) return value.forEach((item, i) => walk(item, `${where}/${i}`));
      if (value === null || typeof value !== 'object') return;
      for (const [key, item] of Object.entries(value)) {
        if (key === 'nullable' || (key === 'example' && !where.endsWith('/properties'))) problems.push(`${where}: ${key}`);
        if ((key === 'exclusiveMinimum' || key === 'exclusiveMaximum') && typeof item !== 'number') problems.push(`${where}: ${key} ${String(item)}`);
        if (key === 'examples' && !Array.isArray(item) && !where.endsWith('/properties')) problems.push(`${where}: examples must be an array`);
        walk(item, `${where}/${key}`);
      }
    };
    for (const [where, schema] of schemas()) {
      walk(schema, where);
      try {
        ajv.compile({ $ref: `openapi${where}` });
      } catch (error) {
        problems.push(`${where}: ${(error as Error).message}`);
      }
    }
    expect(problems).toEqual([]);
    expect(schemas().length).toBeGreaterThan(100);
  });

  /** Statuses each operation must document: derived from the code of the routes (guards, services, filters). */
  const REQUIRED: Record<string, string[]> = {
    'post /settings/api-keys': ['201', '400', '401', '403', '413', '415', '429'],
    'get /settings/api-keys': ['200', '400', '401', '403', '429'],
    'delete /settings/api-keys/{apiKeyId}': ['200', '401', '403', '404', '429'],
    'post /api/v0/sessions': ['201', '400', '401', '403', '404', '413', '415', '422', '429'],
    'post /api/v0/sessions/{sessionId}/messages': ['200', '400', '401', '403', '404', '413', '415', '422', '429'],
    'post /api/v0/agent/claims': ['200', '400', '401', '403', '404', '413', '415', '422', '429'],
    'post /api/v0/agent/sessions/{sessionId}/messages': ['200', '400', '401', '403', '404', '409', '413', '415', '422', '429'],
    'post /api/v0/agent/sessions/{sessionId}/usage': ['200', '400', '401', '403', '404', '409', '422', '429'],
    'post /api/v0/agent/sessions/{sessionId}/heartbeat': ['200', '400', '401', '403', '404', '409', '422', '429'],
    'post /api/v0/agent/sessions/{sessionId}/end-turn': ['200', '400', '401', '403', '404', '409', '422', '429'],
    'post /api/v0/agent/models/{customModelId}/chat/completions': ['200', '400', '401', '403', '404', '413', '415', '429', '502', '503', '504'],
    'post /api/v0/agent/models/{customModelId}/messages': ['200', '400', '401', '403', '404', '413', '415', '429', '502', '503', '504'],
    'patch /api/v0/organization/enterprise-controls': ['200', '400', '401', '403', '412', '413', '415', '429'],
    'post /api/v0/computers': ['201', '400', '401', '403', '404', '409', '413', '415', '429'],
    'get /api/v1/analytics/tokens': ['200', '400', '401', '403', '429'],
    'get /api/v0/events': ['200', '400', '401', '403', '410', '429'],
    'get /api/v0/sessions/{sessionId}/events': ['200', '400', '401', '403', '404', '410', '429'],
    'get /api/v0/organization/audit-log': ['200', '400', '401', '403', '429'],
    // Public, but counted against the anonymous rate limit (only the load balancer's probes are not).
    'get /api/v0/setup': ['200', '400', '429'],
    'post /api/v0/setup': ['201', '400', '401', '408', '409', '413', '415', '429'],
  };

  it('documents every event type with its payload as a union on `type`, and the streams as text/event-stream and JSON', () => {
    const schemas = (doc.components as unknown as { schemas: Record<string, Json> }).schemas;
    const event = schemas.Event as { oneOf: Array<{ $ref: string }>; discriminator: { propertyName: string; mapping: Record<string, string> } };
    expect(event.discriminator.propertyName).toBe('type');
    expect(Object.keys(event.discriminator.mapping).sort()).toEqual([...EVENT_TYPES].sort());
    for (const [type, target] of Object.entries(event.discriminator.mapping)) {
      const envelope = schemas[target.split('/').pop()!] as { properties: { type: { enum: string[] }; data: { $ref: string } } };
      expect(envelope.properties.type.enum).toEqual([type]);
      expect(schemas[envelope.properties.data.$ref.split('/').pop()!]).toMatchObject({ type: 'object', required: expect.any(Array) });
    }
    for (const path of ['/api/v0/events', '/api/v0/sessions/{sessionId}/events']) {
      expect(Object.keys(doc.paths[path].get.responses['200'].content!).sort()).toEqual(['application/json', 'text/event-stream']);
    }
    expect(Object.keys(doc.paths['/api/v0/organization/audit-log'].get.responses['200'].content!).sort()).toEqual(['application/json', 'application/x-ndjson']);
  });

  it('maps the tag of every union with a discriminator to its branches, as the server reads it (`text`, not the schema name `TextBlock`)', () => {
    const schemas = (doc.components as unknown as { schemas: Record<string, Json> }).schemas;
    const unions: Array<{ where: string; tags: Record<string, string>; mapping: unknown }> = [];
    const walk = (value: unknown, where: string): void => {
      if (Array.isArray(value)) return value.forEach((item, i) => walk(item, `${where}/${i}`));
      if (value === null || typeof value !== 'object') return;
      const node = value as { discriminator?: { propertyName: string; mapping?: unknown }; oneOf?: Array<{ $ref: string }> };
      if (node.discriminator && node.oneOf) {
        const property = node.discriminator.propertyName;
        // What Ajv selects a branch by: the branch's own one-value enum for the property.
        const tags = node.oneOf.map((branch) => [
          (schemas[branch.$ref.split('/').pop()!] as { properties: Record<string, { enum: string[] }> }).properties[property].enum[0],
          branch.$ref,
        ]);
        unions.push({ where, tags: Object.fromEntries(tags), mapping: node.discriminator.mapping });
      }
      for (const [key, item] of Object.entries(value)) walk(item, `${where}/${key}`);
    };
    walk(doc.components, '#/components');
    walk(doc.paths, '#/paths');
    expect(unions.map(({ where, mapping }) => ({ where, mapping }))).toEqual(unions.map(({ where, tags }) => ({ where, mapping: tags })));
    const blocks = unions.find(({ where }) => where === '#/components/schemas/ContentBlock');
    expect(Object.keys(blocks!.tags).sort()).toEqual(['document', 'image', 'redacted_thinking', 'text', 'thinking', 'tool_result', 'tool_use']);
    expect(unions.length).toBeGreaterThan(3);
  });

  it('documents every status an operation can answer: 400 on all, 401, 403 and 429 wherever a credential is needed, 408, 413 and 415 with a body, and the table', () => {
    const missing: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (method === 'servers') continue;
        const op = operation as Operation;
        const statuses = Object.keys(op.responses);
        const needed = [
          // Any operation: a malformed URL (`malformed_url`) or a query parameter it does not take.
          '400',
          ...(op.security?.length ? ['401', '403', '429'] : []),
          ...(op.requestBody ? ['408', '413', '415'] : []),
          ...(REQUIRED[`${method} ${path}`] ?? []),
        ];
        for (const status of needed) if (!statuses.includes(status)) missing.push(`${method} ${path} ${status}`);
      }
    }
    expect(missing).toEqual([]);
    for (const key of Object.keys(REQUIRED)) {
      const [method, path] = key.split(' ');
      expect([key, doc.paths[path]?.[method] !== undefined]).toEqual([key, true]);
    }
  });

  it('agrees with the server on which bodies are required: one left out is a 400 naming `body`, unless the document says it may be', async () => {
    const owner = await createUser(t, Role.Owner);
    const agent = await agentOf(t, owner);
    const answers: string[] = [];
    const expected: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const op = operation as Operation & { requestBody?: { required?: boolean } };
        if (method === 'servers' || !op.requestBody) continue;
        const agentOnly =
          (op.responses['403']?.content?.['application/json']?.example as { metadata?: { code?: string } })?.metadata?.code === 'agent_token_required';
        const url = path.replace(/\{\w+\}/g, '0196f1d2-7c3a-7e0b-9f41-3a5c2b8d9e10');
        const http = t.http();
        const res = await http[method as 'post' | 'patch'](url).set(agentOnly ? agent : owner.auth);
        const field = (res.body?.metadata?.errors as Array<{ field: string }> | undefined)?.[0]?.field;
        answers.push(`${method} ${path}: ${res.status < 300 ? 'accepted' : `${res.status} ${field ?? res.body?.metadata?.code}`}`);
        expected.push(`${method} ${path}: ${op.requestBody.required ? '400 body' : 'accepted'}`);
      }
    }
    expect(answers).toEqual(expected);
    expect(expected.filter((line) => line.endsWith('accepted')).length).toBeGreaterThanOrEqual(2);
  });

  it('gives every error answer an example that is a real error body of that status', () => {
    const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, validateFormats: false });
    ajv.addSchema({ ...structuredClone(doc), $id: 'openapi' } as Json);
    const problems: string[] = [];
    let checked = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (method === 'servers') continue;
        for (const [status, response] of Object.entries((operation as Operation).responses)) {
          const media = response.content?.['application/json'];
          // A relay's `default` is the other server's own answer, whatever it is.
          if (status === 'default' || Number(status) < 400 || !media) continue;
          const where = `${method} ${path} ${status}`;
          const example = media.example as { status?: number; title?: string; metadata?: { code?: string } } | undefined;
          if (!example) {
            problems.push(`${where}: no example`);
            continue;
          }
          checked++;
          if (example.status !== Number(status)) problems.push(`${where}: example status ${example.status}`);
          const validate = ajv.compile({
            $ref: `openapi#/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/${method}/responses/${status}/content/application~1json/schema`,
          });
          if (!validate(example)) problems.push(`${where}: ${ajv.errorsText(validate.errors)}`);
          if (!path.startsWith('/api/v1/') && !path.startsWith('/healthz') && !/^[a-z_]+$/.test(String(example.metadata?.code)))
            problems.push(`${where}: no metadata.code`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(200);
  });

  it('documents every API key operation with its auth and error responses', () => {
    const keys = doc.paths['/settings/api-keys'];
    for (const operation of [keys.post, keys.get, doc.paths['/settings/api-keys/{apiKeyId}'].delete]) {
      expect(operation.security).toEqual([{ bearer: [] }]);
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['400', '401']));
    }
    expect(Object.keys(keys.post.responses)).toContain('201');
    expect(Object.keys(doc.paths['/settings/api-keys/{apiKeyId}'].delete.responses)).toContain('404');
  });

  it('places the web application’s endpoints on APP_URL and says which operations are public, and only those', () => {
    expect(doc.paths['/settings/api-keys'].servers).toEqual([{ url: 'https://app.example.test', description: '{app_url}' }]);
    const open: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (method === 'servers') continue;
        const { security } = operation as Operation;
        if (security?.length === 0) open.push(`${method} ${path}`);
        // The worker channel takes a worker's own tokens, and nothing else does.
        else if (path.startsWith('/api/v0/worker/')) expect([`${method} ${path}`, security]).toEqual([`${method} ${path}`, [{ workerToken: [] }]]);
        else expect([`${method} ${path}`, security]).toEqual([`${method} ${path}`, [{ bearer: [] }]]);
      }
    }
    // The MCP OAuth callback is where an authorization server sends a browser back: its `state` identifies the sign-in.
    expect(open.sort()).toEqual(['get /api/v0/mcp-oauth/callback', 'get /api/v0/setup', 'get /healthz', 'get /livez', 'post /api/v0/setup']);
  });
});

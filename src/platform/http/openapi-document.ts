import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { FastifyInstance } from 'fastify';
import { AppConfig } from '../../config/app-config';
import { SchemaRegistry } from './json-schema';
import { toOpenApi31 } from './openapi-31';
import { addRequestExamples, completeResponses } from './openapi-responses';

export const API_VERSION = '0.1.0';

/** Paths the spec places on `{app_url}` (the web application) rather than `{base_url}`. */
const APP_URL_PATHS = [/^\/settings\//, /^\/api\/organization\//];

/**
 * Swagger UI shows this first, so it is short and starts with the one step that makes "Try it out" work: a key.
 * The rules and decisions live in the guide (docs/*.md), named by repository path (Swagger cannot link files).
 */
const DESCRIPTION = `
**1. Authorize.** Click **Authorize** and paste an API key (\`apk_...\`) or a JWT; every operation but \`/healthz\` and
\`/livez\` needs one (**401** otherwise). Where to get a key:
- \`npm run demo\` writes a key for every demo user to \`DATA_DIR/demo-keys.json\` (\`./data\` by default):
  \`node -p "require('./data/demo-keys.json').acme.owner"\`;
- on your own server, the operator CLI prints one: \`npm run cli -- key:create <org> <email> <key name>\`;
- a signed-in user creates more with \`POST /settings/api-keys\` (shown once).

**2. Try it out.** The examples work against the demo's data: \`GET /api/v0/sessions\`, then \`POST /api/v0/sessions\` and
\`POST /api/v0/sessions/{sessionId}/messages\`. The agent channel (\`/api/v0/agent\`) takes a computer's agent token
(\`cpt_...\`; the demo's are in \`DATA_DIR/demo-agent-tokens.json\`).

**Errors** are \`{detail, status, title, metadata}\` with a stable \`metadata.code\` (analytics: \`{title, detail, status,
requestId}\`; readiness: \`{title, detail, status, requestId, metadata}\`); every answer carries \`x-request-id\`. Any
operation may answer **429** \`rate_limited\` with \`Retry-After\`. A method a path does not have answers
**405** \`method_not_allowed\` with \`Allow\` listing the ones it has.

**The guide**, in the repository's \`docs/\` folder: \`docs/getting-started.md\` (first key, first session, first agent turn
with curl), \`docs/concepts.md\` (organizations, roles, sessions, computers, controls, analytics, readiness), \`docs/api.md\`
(authentication, roles, errors, paging, idempotency, limits and every decision where the contract is silent),
\`docs/security.md\`, \`docs/configuration.md\`, \`docs/deployment.md\`, \`docs/analytics.md\` (every metric) and
\`docs/spec-decisions.md\`.
`;

export function buildOpenApiDocument(app: INestApplication, config: AppConfig): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Agent Platform API')
    .setVersion(API_VERSION)
    // The project's licence (package.json), for readers of the document who never see the repository.
    .setLicense('Apache-2.0', 'https://www.apache.org/licenses/LICENSE-2.0')
    .setDescription(DESCRIPTION.trim())
    .addServer(config.baseUrl, '{base_url}')
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', description: 'An API key (apk_...) or a JWT (exp, iat, sub, org_id; at most JWT_MAX_AGE_SECONDS old and long-lived).' },
      'bearer',
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        description: "The worker channel's own: a pool's enrollment token (wkt_..., registration only) or a worker's session token (wks_...).",
      },
      'workerToken',
    );
  const document = SwaggerModule.createDocument(app, builder.build());
  // The JSON Schemas that validate request bodies are published as they are.
  document.components ??= {};
  document.components.schemas ??= {};
  for (const registry of SchemaRegistry.all) Object.assign(document.components.schemas, registry.components() as typeof document.components.schemas);
  if (config.appUrl !== config.baseUrl) {
    for (const [path, item] of Object.entries(document.paths)) {
      if (APP_URL_PATHS.some((pattern) => pattern.test(path))) item.servers = [{ url: config.appUrl, description: '{app_url}' }];
    }
  }
  normalizeSecurity(document);
  completeResponses(document);
  addRequestExamples(document);
  // Written in the 3.0 flavour the validators read; published as 3.1 (see openapi-31.ts).
  return toOpenApi31(document);
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/**
 * Each operation's security as OpenAPI reads it: each requirement once (a controller's @Authenticated and a route's own
 * both name `bearer`), and `[]` where one requirement is nothing (`{}`, what @Public writes): the route needs no
 * credential (AuthGuard lets it through before it reads one), which OpenAPI spells as an empty list.
 */
function normalizeSecurity(document: OpenAPIObject): void {
  for (const item of Object.values(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation?.security) continue;
      const requirements = [...new Map(operation.security.map((requirement) => [JSON.stringify(requirement), requirement])).values()];
      operation.security = requirements.some((requirement) => Object.keys(requirement).length === 0) ? [] : requirements;
    }
  }
}

const DOCS_PATH = 'docs';

/** Swagger's routes (the UI, its assets, the document) need no credentials; call before they are added. */
export function docsArePublic(fastify: FastifyInstance): void {
  const docs = new RegExp(`^/${DOCS_PATH}($|[-/])`);
  fastify.addHook('onRoute', (route) => {
    if (docs.test(route.url)) route.config = { ...route.config, public: true } as typeof route.config;
  });
}

/**
 * Swagger UI at /docs, the document at /docs-json and /docs-yaml. The key given to Authorize lives only as long
 * as the page (never in the browser's storage, where any script of the origin could read it later), and no
 * validator outside this server is asked about the document.
 */
export function setupOpenApi(app: INestApplication, config: AppConfig): void {
  SwaggerModule.setup(DOCS_PATH, app, () => buildOpenApiDocument(app, config), {
    jsonDocumentUrl: 'docs-json',
    yamlDocumentUrl: 'docs-yaml',
    customSiteTitle: 'Agent Platform API',
    swaggerOptions: { persistAuthorization: false, validatorUrl: null },
  });
}

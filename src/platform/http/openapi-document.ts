import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { AppConfig } from '../../config/app-config';

export const API_VERSION = '0.1.0';

/** Paths the spec places on `{app_url}` (the web application) rather than `{base_url}`. */
const APP_URL_PATHS = [/^\/settings\//, /^\/api\/organization\/maturity-level-reports/];

const DESCRIPTION = `
Open-source implementation of the Agent Platform Public API. Click **Authorize** and paste an API key
(\`apk_...\`) or a JWT to use "Try it out" against this server.

## Authentication
Every endpoint except \`/healthz\` and these docs takes \`Authorization: Bearer <token>\`. The token is an
API key (created at \`{app_url}/settings/api-keys\`, shown once, stored only as a SHA-256 hash) or a JWT.
Missing, malformed, unknown, revoked or expired credentials answer **401**.

**Token lifetime and JWT issuance** (not shown in the spec; our decision): API keys last until revoked, or
until an optional \`expiresAt\` chosen at creation. The server issues no JWTs; it accepts JWTs from the
operator's identity provider, signed HS256 with \`JWT_SECRET\` or by a key published at \`JWT_JWKS_URL\`.
A JWT must carry \`exp\`, \`sub\` (the user id) and \`org_id\` (the organization id); \`iss\`/\`aud\` are checked
when \`JWT_ISSUER\`/\`JWT_AUDIENCE\` are set. The user's role is read from the server on every request, so a
role change takes effect at once.

## Roles (not shown in the spec beyond analytics; our decision)
| Role | Sessions | Computers | Analytics, enterprise-control history | API keys |
|---|---|---|---|---|
| owner, manager | read and write all of the organization's | read and write all | yes | own; may list and revoke any of the organization's |
| member | own, read and write; read all of the organization's unless \`restrictMemberVisibility\` | own, read and write | **403** | own |
| guest | read own only; every write **403** | **403** on writes | **403** | own |

\`restrictApiKeyCreationToManagers\` makes key creation **403** for members and guests.
A resource of another organization answers **404**, exactly as one that does not exist: never 403, never its data.
An id that is not well formed is also simply not found (404).

## Errors
v0 and \`{app_url}/settings\` endpoints answer \`{detail, status, title, metadata?}\`; analytics answers
\`{title, detail, status, requestId}\`; readiness answers all of \`detail\`, \`status\`, \`title\` and \`requestId\`.
\`metadata.code\` is a stable snake_case code; validation errors name the first offending field in \`detail\` and
list every problem in \`metadata.errors\` as \`{field, message}\`. Every response carries \`x-request-id\` (the
caller's own, when it sends a sane one); quote it when reporting a 500. Unknown routes answer 404 in the same body.

## Pagination
Paged v0 lists take \`limit\` (a string holding 1-100, default 20; anything else is 400) and \`cursor\` (the
previous page's \`nextCursor\`, unchanged; a cursor carries a checksum, so an altered cursor, or one from
another list, is 400), and answer
\`pagination: {hasMore, nextCursor}\` with \`nextCursor: null\` on the last page. Cursors are keyset positions,
not offsets: rows inserted while you page are never repeated and never make you skip a row.

## Limits
Request bodies: JSON only (\`Content-Type: application/json\`, else **415**), at most \`BODY_LIMIT_BYTES\`
(default 32 MiB, room for base64 images and PDFs), else **413** in the v0 body.
Rate limits (numbers not shown in the spec; our decision): the server applies none itself; put a reverse proxy
in front for per-client limits.
`;

export function buildOpenApiDocument(app: INestApplication, config: AppConfig): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Agent Platform API')
    .setVersion(API_VERSION)
    .setDescription(DESCRIPTION.trim())
    .addServer(config.baseUrl, '{base_url}')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'An API key (apk_...) or a JWT.' }, 'bearer');
  const document = SwaggerModule.createDocument(app, builder.build());
  if (config.appUrl !== config.baseUrl) {
    for (const [path, item] of Object.entries(document.paths)) {
      if (APP_URL_PATHS.some((pattern) => pattern.test(path))) item.servers = [{ url: config.appUrl, description: '{app_url}' }];
    }
  }
  return document;
}

/** Swagger UI at /docs, the document at /docs-json and /docs-yaml; the Authorize button remembers the key. */
export function setupOpenApi(app: INestApplication, config: AppConfig): void {
  SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app, config), {
    jsonDocumentUrl: 'docs-json',
    yamlDocumentUrl: 'docs-yaml',
    customSiteTitle: 'Agent Platform API',
    swaggerOptions: { persistAuthorization: true },
  });
}

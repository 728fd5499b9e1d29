import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { FastifyInstance } from 'fastify';
import { AppConfig } from '../../config/app-config';
import { SchemaRegistry } from './json-schema';

export const API_VERSION = '0.1.0';

/** Paths the spec places on `{app_url}` (the web application) rather than `{base_url}`. */
const APP_URL_PATHS = [/^\/settings\//, /^\/api\/organization\//];

const DESCRIPTION = `
Open-source implementation of the Agent Platform Public API. Click **Authorize** and paste an API key
(\`apk_...\`) or a JWT to use "Try it out" against this server.

## Authentication
Every endpoint except \`/healthz\`, \`/livez\` and these docs takes \`Authorization: Bearer <token>\`. The token is an
API key (created at \`{app_url}/settings/api-keys\`, shown once, stored only as a SHA-256 hash) or a JWT.
Missing, malformed, unknown, revoked or expired credentials answer **401**.

**Token lifetime and JWT issuance** (not shown in the spec; our decision): API keys last until revoked, or
until an optional \`expiresAt\` chosen at creation. The server issues no JWTs; it accepts JWTs from the
operator's identity provider, signed HS256 with \`JWT_SECRET\` or by a key published at \`JWT_JWKS_URL\`.
A JWT must carry \`exp\`, \`iat\`, \`sub\` (the user id) and \`org_id\` (the organization id); one issued more than
\`JWT_MAX_AGE_SECONDS\` (default 86400) ago, valid for longer than that (\`exp - iat\`), or with an \`iat\` more than 60 s
ahead of the server's clock is **401**. \`iss\`/\`aud\` are checked when \`JWT_ISSUER\`/\`JWT_AUDIENCE\` are set. The user's role and the organization's features are read from the
server, not the token; each instance reuses a credential's lookup for \`AUTH_CACHE_MS\` (default 1 s), so a role or
feature change takes effect within that time. A key revoked through an instance stops working there at once, on
other instances within \`AUTH_CACHE_MS\`; an expired key stops at once everywhere.

## Roles (not shown in the spec beyond analytics; our decision)
| Role | Sessions | Computers | Analytics, enterprise controls and their history | API keys |
|---|---|---|---|---|
| owner, manager | read and write all of the organization's | read and write all | yes | own; may list and revoke any of the organization's |
| member | own, read and write; read all of the organization's unless \`restrictMemberVisibility\` | own, read and write | **403** | own |
| guest | read own only; every write **403** | **403** on every computers route | **403** | own |

\`restrictApiKeyCreationToManagers\` makes key creation **403** for members and guests.
A resource of another organization answers **404**, exactly as one that does not exist: never 403, never its data.
An id that is not well formed is also simply not found (404).

## Errors
v0 and \`{app_url}/settings\` endpoints answer \`{detail, status, title, metadata?}\`; analytics answers
\`{title, detail, status, requestId}\`; readiness answers all of \`detail\`, \`status\`, \`title\` and \`requestId\`.
\`metadata.code\` is a stable snake_case code; validation errors name the first offending field in \`detail\` and
list every problem in \`metadata.errors\` as \`{field, message}\`. Every response carries \`x-request-id\` (the
caller's own, when it sends a sane one); quote it when reporting a 500. Unknown routes answer 404 in the same body.
Any operation may answer **429** \`rate_limited\` (see § Limits).

## Pagination
Paged v0 lists take \`limit\` (a string holding 1-100, default 20; anything else is 400) and \`cursor\` (the
previous page's \`nextCursor\`, unchanged; a cursor carries a checksum, so an altered cursor, or one from
another list, is 400), and answer
\`pagination: {hasMore, nextCursor}\` with \`nextCursor: null\` on the last page. Cursors are keyset positions,
not offsets: rows inserted while you page are never repeated and never make you skip a row.

## Sessions (decisions where the spec says "not shown")
**Status transitions.** A new session is \`idle\`. A user message makes it \`pending\` (work waiting for an agent). An agent
taking the work (agent channel) makes it \`running\`. The agent ending its turn makes it \`idle\` (and sets \`completedAt\`), or
\`pending\` again when user messages arrived during the turn. A user message while \`running\` keeps it \`running\`. The
add-message response reports the status after submission. A turn whose agent goes silent past its lease (\`AGENT_LEASE_MS\`,
default 5 minutes) stays \`running\` and is given to the next agent that asks.

**Ordering.** Sessions: newest first (\`createdAt\`, then \`sessionId\`, descending). Messages: conversation order, oldest
first; each message's \`parentId\` is the message before it unless an agent names another.

**sessionSettings.** Every field is optional. Value sets: \`reasoningEffort\` and \`specModeReasoningEffort\`: none, dynamic, off,
minimal, low, medium, high, xhigh, max (the Message enum); \`interactionMode\`: auto, spec, ask; \`autonomyLevel\`: off, low, medium,
high; \`autonomyMode\`: normal, unattended; \`providerLock\`: vendor-a, vendor-b, vendor-c, generic-chat-completion-api, custom;
\`apiProviderLock\`: messages, responses, chat-completions. \`tokenUsage\` and \`assistantActiveTimeMs\` are kept by the server from
agent reports and cannot be set by clients.

**Messages.** \`createdAt\` and \`updatedAt\` of a message are Unix ms, like a session's. Add-message stores text, then images,
then files as content blocks; text files use the document text source \`{type: "text", mediaType: "text/plain", data: <text>,
name?, mime?}\`. Base64 must be valid and its bytes must match \`mediaType\` (400 otherwise). \`userMessageSource\` is
\`sessions_api\`.

**computerId on reads** asks that computer directly: only sessions connected to it are answered. It must be a computer of
your organization that you can see (members: their own computers; guests: none), else 404 \`computer_not_found\`.

**List messages** is enabled per organization; elsewhere it answers 403 \`message_history_disabled\`, checked before the session. A page
also stops at \`MESSAGE_PAGE_MAX_BYTES\` (see § Limits).

**Added operations** (not in the spec): create, update and delete a session; the agent channel under \`/api/v0/agent\`.

**Status codes.** 200 reads and add-message, 201 create, 204 delete; 400 invalid input; 401; 403 (guest writes
\`insufficient_role\`, a member changing another's session \`read_only_role\`, \`message_history_disabled\`); 404
(\`session_not_found\`, \`computer_not_found\`); 409 \`turn_not_active\` on the agent channel; 413; 415; 422
\`idempotency_key_reused\`.

## Computers (decisions where the spec says "not shown")
**Modes.** \`provider\` is \`byom\` or \`local\` (the managed provider this server ships); any other value is 400.
*BYOM* registers an existing machine: \`name\`, \`hostId\` (a UUID, the machine's id) and \`remoteUser\` (the user its agent runs as)
are required; \`repos\`, \`autoInstallDeps: true\` and \`source\` are refused (400); it is \`active\` at once, with no steps.
*Managed* (\`local\`) prepares a workspace on the server's host, \`COMPUTERS_DIR/<id>\`: \`name\` is required; \`hostId\` is assigned
(giving one is 400); \`remoteUser\` defaults to the user the server runs as; \`repos\` are cloned with git and, with
\`autoInstallDeps\`, each repo's dependencies are installed by the package manager its lockfile names (pnpm, yarn, bun, npm, uv,
poetry, pipenv, bundler, composer, cargo, go), with npm-family package scripts off unless the operator sets \`LOCAL_INSTALL_SCRIPTS\`. Constraints: \`name\` and \`remoteUser\` 1-63 characters (\`remoteUser\` a POSIX user
name); \`repos\` at most 20, each 1-2048 characters; \`provider\`, \`serviceAccountId\` and \`source.templateId\` at least 1.
Repos are https, http, ssh or git URLs or scp-style addresses, without a password; local paths and file:// URLs only under the
one directory the operator allows (\`LOCAL_REPOS_DIR\`, none by default), so no caller can make the server clone its own files.
\`serviceAccountId\` (owners and managers) creates the computer for that service account of the organization
(\`ownerPrincipalKind: service_account\`); an id that names a person, another organization's user or nobody is **404**
\`service_account_not_found\`. Service accounts are users of kind \`service_account\`, made by the operator
(\`service-account:create\` in the CLI). Enterprise controls \`managedComputersEnabled\` / \`byomComputersEnabled\` and their
allowed-email lists (empty: everyone) gate creation: **403** \`computer_provider_disabled\` or \`computer_creation_not_allowed\`.

**source.** \`{kind: "template", templateId}\` names a template of the provider (\`local\` offers \`blank\`, an empty workspace), or
our second variant \`{kind: "computer", computerId}\`: start from an existing computer you can see, whose \`repos\` and
\`autoInstallDeps\` apply where the body gives none.

**Provisioning steps.** \`create-computer\` (the workspace), then \`clone-repos\` (when there are repos), then
\`install-dependencies\` (with \`autoInstallDeps\` and repos). Each goes \`pending\` → \`running\` → \`completed\`, or \`failed\` with
\`error\`; \`startedAt\`/\`completedAt\` are Unix ms. Every step's \`installSessionId\` is the computer's provisioning-log session,
where each command and its output is a \`tool\` message. A scheduler on every instance claims steps in the database
(\`FOR UPDATE SKIP LOCKED\`, leased for \`PROVISIONING_LEASE_MS\`): a step runs on one instance at a time; if its instance dies, another
takes it over after the lease and runs it again from the start (steps are safe to repeat); a step running longer than
\`PROVISIONING_STEP_TIMEOUT_MS\` (default 10 minutes) is killed and fails.

**Computer status.** BYOM: created \`active\`. Managed: created \`provisioning\`; → \`active\` when the last step completes; →
\`error\` when a step fails. \`POST /api/v0/computers/{id}/retry\` moves \`error\` → \`provisioning\` (the failed step runs again,
then the rest); on any other status it is 409 \`computer_not_failed\`. \`DELETE\` removes the computer and its workspace from any status.

**Response shapes.** List and update answer the spec's list shape (with \`hostname\` once the agent connected); create adds
\`hostId\`, \`clonedRepoDirectories\`, \`ownerPrincipalKind\`, \`ownerId\`, \`computerSource\` and our \`agentToken\`; our get-one
and retry answer every field except \`agentToken\`. The list is \`{computers}\`, not paged, newest first.

**Agent tokens.** Each computer has an agent token (\`cpt_…\`), shown once in the create response, stored as a SHA-256 hash, replaced
by \`POST /api/v0/computers/{id}/agent-token\` (the old one stops working). It works only on the agent channel
(\`relayAgentUrl\` = \`{base_url}/api/v0/agent\`; elsewhere **403** \`computer_token_not_accepted\`), only for work routed to its
computer; its agent reports the machine's \`hostname\` with \`POST /api/v0/agent/connect\`. \`relayClientUrl\` is
\`{base_url}/api/v0/sessions?computerId={id}\`, where clients read the computer's sessions.

**Added operations** (not in the spec): get one (\`GET /api/v0/computers/{id}\`), delete, retry, rotate the agent token, connect.

**Status codes.** 201 create; 200 list, get, update, retry, rotate, connect; 204 delete; 400 invalid input (\`validation_failed\`);
401; 403 (\`insufficient_role\` for guests, \`read_only_role\` for a member's \`serviceAccountId\`, \`computer_provider_disabled\`,
\`computer_creation_not_allowed\`, \`computer_token_not_accepted\`, \`computer_credential_required\`); 404 (\`computer_not_found\`,
\`service_account_not_found\`); 409 \`computer_not_failed\`, \`quota_exceeded\`; 413; 415; 429 \`quota_exceeded\`.

**Quotas** (per organization; our decision). Create counts, under a lock per organization (so concurrent creates at the limit
never both pass): \`COMPUTERS_PER_ORGANIZATION\` (default 100) computers of any kind and \`LOCAL_AGENTS_PER_ORGANIZATION\`
(default 10) \`local\` computers, whose agents this server runs: one more is **409** \`quota_exceeded\`. Only deleting a computer
frees a slot, so 409 (the request conflicts with the organization's state), not 429, which clients retry by waiting.
\`PROVISIONING_PER_ORGANIZATION\` (default 5) managed computers provisioning at once: creating or retrying one more is **429**
\`quota_exceeded\`, lifted as soon as one is \`active\` or in \`error\` (a retry refused leaves the computer in \`error\`). The
body's \`metadata\` is \`{code: "quota_exceeded", quota, limit}\`, \`quota\` the variable's name; nothing is stored. If the
operator lowers \`LOCAL_AGENTS_PER_ORGANIZATION\` below what an organization has, its oldest \`local\` computers keep their agents
and the newest get none (the server's log says which); deleting one starts the next.

## Enterprise controls (decisions where the spec says "not shown")
**Roles.** Owners and managers read the controls, change them, and read their history; members and guests get **403**
\`insufficient_role\`. Any user, and a computer's agent token, reads the agent policy.

**Revisions.** \`GET /api/v0/organization/enterprise-controls\` (added) answers the settings in force with their revision
(\`ETag: "N"\`); an organization never changed has the defaults at revision 0, and an empty history. \`PATCH\` (added) takes
\`{settings}\`, a JSON Merge Patch (RFC 7396) over the whole snapshot: objects merge member by member, arrays are replaced whole,
\`null\` removes a field (only an optional one: nulling a required field is **400**). The patched settings are checked whole;
**400** names every bad path (\`settings.sandbox.network.httpProxyPort\`). A change that alters something becomes revision N+1
(per organization, from 1, no gaps) holding the whole snapshot, its diff and the user who made it (their id, email and name
as they were); a change that alters nothing creates no revision. \`If-Match: "N"\` makes the change conditional: another revision
in force answers **412** \`revision_mismatch\` (\`metadata.currentRevision\`). Without it, concurrent changes are applied one after
the other (under a lock per organization), each on the revision before it. \`GET …/history\` lists revisions newest first (the spec's shape);
\`GET …/history/{revision}\` (added) adds \`diff\`: RFC 6902 operations from the revision before (the defaults, for revision 1).
Writing a revision is applying it: every module reads the latest revision, so no change is ever written but not in force.
Each instance reuses an organization's controls for \`CONTROLS_CACHE_MS\` (default 1 s); a change takes effect at once on the
instance that made it, within that time on the others. Each change publishes \`enterpriseControls.settings.revised\`.

**Settings.** Every field is present in a snapshot except \`sessionRetentionDays\` (absent: sessions are kept forever),
\`sessionDefaultSettings.model\`/\`specModeModel\` (absent: no default) and the sandbox proxy ports (absent: no proxy). Maps:
\`mcpAutonomyOverrides\` MCP server → autonomy level (off, low, medium, high); \`userModelPolicies\` user id (a user of the
organization) → any fields of \`modelPolicy\`, which replace the organization's for that user; \`enabledPlugins\`
\`plugin@marketplace\` → on/off; \`extraKnownMarketplaces\` name → \`{source, repo, ref?}\`. Marketplace \`source\` (a code host):
github, gitlab, bitbucket, git. Limits: lists 1,000 entries, strings 2,048 characters (guidance 16,384), 100 custom models,
maps 500 entries, 100 router rules, \`sessionRetentionDays\` 1-36,500, nesting 64 levels, the whole snapshot 1 MiB. User ids
(\`missionPolicy.allowedUserIds\`, \`userModelPolicies\` keys) are written as the API writes them, in lower case. Defaults: nothing is
restricted that was open before (every model allowed, both kinds of computers on, no retention); see schema \`EnterpriseSettings\`.

**Custom model secrets.** A custom model's \`apiKey\`, every \`extraHeaders\` value (where vendors put keys) and the credentials
of \`cloudModelConfig\` (\`cloudAuthRefresh\`, \`cloudCredentialExport\`) are encrypted at rest (AES-256-GCM, \`SECRETS_KEY\`) and
never answered in full: every answer, the history, the diffs and \`GET /api/v0/agent/policy\` show \`****\` plus the last four
characters (values of 12 or more characters). Sending the masked value back keeps the stored one, but only while the model
still sends to the same origins (\`baseUrl\`, \`cloudModelConfig.cloudBaseUrl\`): a secret stays bound to the address it was
given for, so a change that moves a model with a secret left masked, or with its stored \`apiKey\` left out, is **400** naming
the field (send the secret for the new address in full). A masked value that is not the stored value's mask is **400**.
\`extraHeaders\` may not name headers that steer the request or that the relay sets: hop-by-hop headers, \`Host\`, \`Cookie\`,
\`Content-*\`, \`Forwarded\`, \`X-Forwarded-*\`, \`Proxy-*\`, and \`Authorization\` when the model has an \`apiKey\`. Agents use
custom models through the relay, \`POST /api/v0/agent/models/{customModelId}/chat/completions\`: its rules (only agent tokens,
public addresses only unless the operator names the host in \`MODEL_RELAY_ALLOWED_HOSTS\`, no redirects, what crosses) are in
that operation's description.

**In force.** \`sessionDefaultSettings.model\` and \`specModeModel\` fill new sessions that name none. \`modelPolicy\` decides
which models a session may use, on create, on update, and on each new message (a model blocked since stops taking turns):
1. \`blockedModelIds\` are refused; 2. a custom model (a session \`model\` equal to a \`customModels[].id\`) needs
\`allowCustomModels\` and, when \`allowedBaseUrls\` is not empty, a \`baseUrl\` under one of them; 3. \`requireExplicitOptInModelIds\`
must also be in \`allowedModelIds\`; 4. other models are allowed under \`allowAllServiceModels\`, else only \`allowedModelIds\`.
A refusal is **403** \`model_not_allowed\` whose \`detail\` and \`metadata.rule\` name the rule. \`isFastModelsAllowed\` and
\`allowServiceRouterByok\` need a model catalogue the server does not keep: agents enforce them. \`restrictApiKeyCreationToManagers\`,
\`restrictMemberVisibility\` and the computer controls: see § Roles and § Computers. \`sessionRetentionDays\`: each instance
sweeps every \`RETENTION_SWEEP_MS\` (default 1 h) and deletes sessions with no activity (\`updatedAt\`) for that many days, with
their messages, in batches of 500 (\`FOR UPDATE SKIP LOCKED\`, so instances never delete twice or wait on each other); a session
an agent holds a live turn on is kept. \`GET /api/v0/agent/policy\` (added) serves what agents obey as one document: command
lists, sandbox, network policy, MCP policy and overrides, plugins and marketplaces, custom models (secrets masked), session
defaults, and the caller's effective \`modelPolicy\`; agent tokens, owners, managers and members may read it, guests may not.

**Status codes.** 200; 400 \`validation_failed\` (also a malformed \`If-Match\`), \`invalid_cursor\`; 401; 403
\`insufficient_role\`; 404 \`revision_not_found\`; 412 \`revision_mismatch\`; 413; 415; 503 \`secret_unreadable\` (a stored key no key in \`SECRETS_KEY\` decrypts).

## Readiness reports (decisions where the spec says "not shown")
Served on \`{app_url}\` without a version prefix, at \`/api/organization/maturity-level-reports\` and the reference's other path
\`/api/organization/agent-readiness-reports\`. Every role reads; owners, managers and members upload (\`POST\`, added), guests get
**403**. Errors carry \`detail\`, \`status\`, \`title\`, \`requestId\` and \`metadata\` (so they satisfy both the v0 and the
reference body).

**Listing.** Newest first (\`createdAt\`, then \`reportId\`). \`limit\`: any positive integer, default 20; a page holds at most 100,
so a larger limit answers 100. \`startAfter\`: the \`reportId\` of the last report of the previous page; one that is malformed,
unknown, or another organization's is **400** \`unknown_start_after\`. The response is \`{reports}\` with no pagination metadata:
a page shorter than the limit is the last.

**Repositories.** A \`repoId\` is \`repo_\` and 20 hexadecimal digits of the SHA-256 of the repository's normalized URL (host in
lower case, without credentials or port; path without \`.git\` or trailing slashes; path case kept), so
\`https://host/a/b.git\`, \`https://host/a/b\` and \`git@host:a/b.git\` are one repository. \`GET /api/organization/readiness-repositories\`
(added) lists them with their latest level; \`GET /api/organization/maturity-level\` (added) answers the organization's level and
the criteria table. scp-like addresses are answered as their \`ssh://\` URL, so every \`repoUrl\` is a URI.

**Criteria.** 29 criteria over the nine pillars, each at one of five levels and scoped to the repository or to each application
(see \`GET /api/organization/maturity-level\`). Reports may carry other snake_case ids (at most 64 characters); they are kept
and do not count towards levels. \`numerator\` ≤ \`denominator\`, \`denominator\` ≥ 1. At most 500 applications and 200 criteria
per report. The evaluator: \`npm run cli -- readiness evaluate <path> [--json] [--upload]\`. Each upload publishes
\`readiness.report.created\`.

## Analytics
Five GET endpoints under \`/api/v1/analytics\` (\`tokens\`, \`tools\`, \`activity\`, \`productivity\`, \`users\`), owners and
managers only, answer \`{data, meta}\`. Date rules: both dates required, YYYY-MM-DD, UTC, \`startDate\` ≤ \`endDate\`, ending before
today, at most 400 days; **400** otherwise, in \`{title, detail, status, requestId}\`. Days before 2026-01-14 are not answered (a range
before it has no rows). Without \`group_by\`, a row for every day (zeros on quiet days).

The numbers are projections of the platform's own activity. Sessions, messages, tool calls (with MCP server, skills, files, commits,
pull requests), hooks and usage reports are recorded as facts in the same transaction as the activity; a rollup folds each closed day
into daily rows (at start-up, every \`ANALYTICS_ROLLUP_MS\`, and on \`POST /api/v1/analytics/rollup\`, owners only), picking up late
facts for days already rolled up. Highlights (every metric is defined in \`docs/analytics.md\`):
- billable tokens = input + output (thinking included) + 125% of cache writes + 10% of cache reads, rounded down per day, user and model;
- a user is active on a day they sent a user message; WAU and MAU count users active in the 7 and 30 days ending on the row's date,
  each user once whatever the clients; clients: \`terminal-ui\` (cli_tui, cli_acp), \`web\` (web, desktop), \`non-interactive-cli\` (the rest);
- autonomy ratio = tool calls ÷ user turns, per user and day; avg and nearest-rank p50/p90 over users with a turn that day;
- MCP servers are folded to lower case; tool names are cleaned of parsing artifacts; file languages come from GitHub Linguist's table;
- \`/users\`: \`limit\` counts users (each with a row per active day, by user id then date); \`next_cursor\` is the page's last user id.

## Idempotency
The POSTs under \`/api/v0/sessions\` and \`/api/v0/agent\` (not connect) take an optional \`Idempotency-Key\` header (1-255 visible ASCII characters, per user, remembered for
at least 24 hours). A retry with the same key and body returns the first response with \`Idempotent-Replayed: true\` and does
nothing again; the same key with a different request is **422**. The key is stored in the same transaction as the work, so a
stored key always means the work was done. Failed requests are not remembered. API key creation, computer creation and agent
token rotation do not take the header: a stored response would keep the secret they answer. A computer's agent token has keys of
its own, apart from its owner's.

## Limits
Message pages (our decision): besides \`limit\`, a page of messages (list messages, and the agent's read of its turn's
conversation) holds at most \`MESSAGE_PAGE_MAX_BYTES\` (default 16 MiB) of messages, a message counting as the bytes of its
\`content\` and attributes as JSON: the page stops before the message that would pass it, with \`hasMore: true\`, and
\`nextCursor\` continues at exactly that message. A message larger than the budget comes alone on its page. So a client gets
every message by following \`nextCursor\` while \`hasMore\`, whatever their sizes, and pages may hold fewer than \`limit\`.

Messages (not shown in the spec; our decision): add-message \`text\` 1-200,000 characters and not blank; at most 20 images of at
most 7,000,000 base64 characters (about 5 MiB) each; at most 20 files: PDFs of at most 14,000,000 base64 characters (about
10 MiB), text files of at most 2,000,000 characters; at most 500 content blocks per message, 100 messages per agent append.

**Request bodies.** JSON only (\`Content-Type: application/json\`, or \`application/merge-patch+json\`, else **415**). Add-message,
the agent channel's message append and the custom-model relay take up to \`MESSAGE_BODY_LIMIT_BYTES\` (default 32 MiB, room for
base64 images and PDFs); every other operation up to \`BODY_LIMIT_BYTES\` (default 1 MiB). A larger body is **413**
\`payload_too_large\` with that operation's \`metadata.limitBytes\`. Arrays and objects nested deeper than \`JSON_MAX_DEPTH\`
(default 64 levels) are **400** \`json_too_deep\`. The credential is checked before the body is read: a request without a valid
one is **401** on its headers alone, and the connection is closed rather than the body read. A request must arrive whole,
headers and body, within \`REQUEST_TIMEOUT_MS\` (default 2 minutes): a client still sending after it gets **408**
\`request_timeout\` and is disconnected. A request Node cannot parse (a malformed \`Content-Length\`, say) gets **400**
\`malformed_request\` in the v0 body.

**Long polls and computers.** Claims waiting for work (\`waitMs\`) are capped per computer (\`LONG_POLLS_PER_COMPUTER\`,
default 10) and per organization (\`LONG_POLLS_PER_ORGANIZATION\`, default 200) on each instance: **429**
\`too_many_long_polls\`. An organization may have \`COMPUTERS_PER_ORGANIZATION\` computers (default 100; **409**
\`quota_exceeded\`), \`PROVISIONING_PER_ORGANIZATION\` managed computers provisioning at once (default 5; **429**) and
\`LOCAL_AGENTS_PER_ORGANIZATION\` agents run by this server (default 10; **409**), each refusal naming \`metadata.quota\`.

**Rate limits** (numbers not shown in the spec; our decision). Requests are counted in fixed one-minute windows (starting on
the minute): per credential (an API key, a JWT's user, a computer token; \`RATE_LIMIT_CREDENTIAL_PER_MINUTE\`, default 1,200), per
organization (all its credentials together; \`RATE_LIMIT_ORGANIZATION_PER_MINUTE\`, default 6,000), and per client address for
requests without a valid credential (failed authentication, unknown routes, these docs; \`RATE_LIMIT_ANONYMOUS_PER_MINUTE\`,
default 120; IPv6 addresses by /64; behind a proxy named in \`TRUST_PROXY\`, the address \`X-Forwarded-For\` gives). \`/healthz\` and \`/livez\` are never counted. 0 turns a limit off. Limits are checked before the body is read.
A request over a limit is **429** \`rate_limited\` (\`metadata.policy\`: credential, organization or anonymous; \`limit\`,
\`windowSeconds\`, \`retryAfterSeconds\`) with \`Retry-After\` in seconds; a request refused by its credential's limit does not
count against its organization's. Every counted response carries the headers of draft-ietf-httpapi-ratelimit-headers:
\`RateLimit-Policy: "credential";q=1200;w=60, "organization";q=6000;w=60\` (or \`"anonymous";q=120;w=60\`) and
\`RateLimit: "credential";r=<remaining>;t=<seconds to the window's end>\` for the limit closest to running out. With several
instances on one PostgreSQL database the limits hold across them: instances take the window's budget from the database in
blocks of 5%, so a client gets the configured rate in all, give or take the unspent part of a block per instance.
`;

export function buildOpenApiDocument(app: INestApplication, config: AppConfig): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Agent Platform API')
    .setVersion(API_VERSION)
    .setDescription(DESCRIPTION.trim())
    .addServer(config.baseUrl, '{base_url}')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'An API key (apk_...) or a JWT (exp, iat, sub, org_id; at most JWT_MAX_AGE_SECONDS old and long-lived).' }, 'bearer');
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
  return document;
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

import { ref, SchemaObject, SchemaRegistry, uuidString } from '../../../platform/http/json-schema';
import { MESSAGE_DELTA_KINDS, type EventType } from '../../../platform/events';
import { ROLES, USER_KINDS } from '../../auth';
import { ComputerStatus } from '../../computers';
import { MessageRole, SessionStatus, TOOL_APPROVAL_STATUSES } from '../../sessions';
import { EVENT_QUERIES } from './event-queries';

/**
 * The public catalogue of event types: each type's `data` as a JSON Schema, published in the
 * OpenAPI document with the envelope every stream, list, audit entry and webhook uses. Typed by
 * the event map, so a type raised anywhere in the server without a schema here does not compile.
 */
const nullableUuid = (description: string): SchemaObject => ({ type: 'string', format: 'uuid', nullable: true, description });
const text = (description: string, extra: SchemaObject = {}): SchemaObject => ({ type: 'string', description, ...extra });
const oneOf = (values: readonly string[], description: string): SchemaObject => ({ type: 'string', enum: [...values], description });
const object = (description: string, properties: Record<string, SchemaObject>, optional: string[] = []): SchemaObject => ({
  type: 'object',
  description,
  required: Object.keys(properties).filter((name) => !optional.includes(name)),
  properties,
});

const SESSION_STATUSES = Object.values(SessionStatus);
const COMPUTER_STATUSES = Object.values(ComputerStatus);
const TOKEN_USAGE: SchemaObject = object(
  'Tokens one model used.',
  Object.fromEntries(
    ['inputTokens', 'outputTokens', 'cacheCreationTokens', 'cacheReadTokens', 'thinkingTokens'].map((field) => [field, { type: 'integer', minimum: 0 }]),
  ),
);

/** A webhook as its events show it: never its secret, only its URL's origin (a path often holds the receiver's token). */
const webhook = (more: Record<string, SchemaObject> = {}): SchemaObject =>
  object('', {
    webhookId: uuidString('The webhook.'),
    origin: text('`https://host:port` of its URL.'),
    eventTypes: { type: 'array', items: { type: 'string' }, description: 'The types it receives; empty: every type.' },
    enabled: { type: 'boolean' },
    ...more,
  });

/** A computer as its created and deleted events name it. */
const computerNamed = (): Record<string, SchemaObject> => ({
  computerId: uuidString('The computer.'),
  name: text('Its name.'),
  provider: text('`byom` or `local`.'),
  ownerId: uuidString('Its owner.'),
});

/** A worker pool as its events show it. */
const workerPool = (): SchemaObject =>
  object('', {
    poolId: uuidString('The pool.'),
    name: text('Its name.'),
    maxComputersPerWorker: { type: 'integer', nullable: true, description: 'Its cap on computers per worker, or null.' },
    allowUnsandboxed: { type: 'boolean', description: 'Whether unsandboxed workers may register.' },
  });

/** An enrollment token as its events show it: never the token. */
const enrollmentToken = (): SchemaObject =>
  object('', {
    poolId: uuidString('Its pool.'),
    tokenId: uuidString('The token.'),
    name: text('Its name.'),
    prefix: text('The first characters of the token, as the tokens list shows them.'),
    expiresAt: { type: 'integer', nullable: true, description: 'When it expires (Unix ms), or null.' },
  });

export interface EventTypeDoc {
  /** When it is raised, in a sentence. */
  summary: string;
  /** What kind of object it is about (`target.kind`), and which field of `data` names it. */
  target: { kind: string; field: string };
  data: SchemaObject;
}

/** Every event type, what it means and its data. */
export const EVENT_CATALOGUE: { readonly [T in EventType]: EventTypeDoc } = {
  'session.created': {
    summary: 'A session was created.',
    target: { kind: 'session', field: 'sessionId' },
    data: object('', {
      sessionId: uuidString('The new session.'),
      ownerId: uuidString('Its owner.'),
      computerId: nullableUuid('The computer it is connected to, if any.'),
      title: text('Its title.', { nullable: true }),
    }),
  },
  'session.status_changed': {
    summary: 'A session moved from one status to another (`idle`, `pending`, `running`).',
    target: { kind: 'session', field: 'sessionId' },
    data: object('', {
      sessionId: uuidString('The session.'),
      from: oneOf(SESSION_STATUSES, 'Its status before.'),
      to: oneOf(SESSION_STATUSES, 'Its status now.'),
    }),
  },
  'message.added': {
    summary: "A message was stored in a session: a user's, an agent's or the server's own (provisioning output).",
    target: { kind: 'message', field: 'messageId' },
    data: object(
      '',
      {
        sessionId: uuidString('The session.'),
        messageId: uuidString('The message.'),
        role: oneOf(Object.values(MessageRole), 'Its role.'),
        authorId: nullableUuid('Who wrote a user message; null for the others.'),
        computerId: nullableUuid("For a user message: the computer whose agent is to take it, or null for any of the organization's agents."),
        message: {
          ...ref('Message'),
          description: 'The message itself, when your organization keeps message history (`messageHistory`); absent otherwise, or when it was deleted since.',
        },
      },
      ['message'],
    ),
  },
  'turn.usage_reported': {
    summary: 'An agent reported the tokens one model used in a turn.',
    target: { kind: 'session', field: 'sessionId' },
    data: object('', {
      sessionId: uuidString('The session.'),
      userId: uuidString("The session's owner, whom the usage is counted for."),
      model: text('The model.'),
      usage: TOKEN_USAGE,
    }),
  },
  'turn.interrupted': {
    summary: 'A user interrupted the running turn: its agent stops, writes what it has and ends the turn, and the session becomes `idle`.',
    target: { kind: 'session', field: 'sessionId' },
    data: object('', { sessionId: uuidString('The session.'), turnId: uuidString('The turn interrupted.') }),
  },
  'tool_approval.requested': {
    summary: 'An agent asks a person to approve a tool call the controls or the session name; the call waits.',
    target: { kind: 'tool_approval', field: 'approvalId' },
    data: object('', {
      sessionId: uuidString('The session.'),
      approvalId: uuidString('The approval to decide (POST /api/v0/sessions/{sessionId}/tool-approvals/{approvalId}).'),
      turnId: uuidString('The turn.'),
      toolName: text('The tool.'),
      toolCallId: text("The model's id of the call.", { nullable: true }),
      summary: text('What the call does, in one line (the command line, for a command).'),
      expiresAt: { type: 'integer', description: 'Unix ms: unanswered by then, the call is denied (`expired`).' },
    }),
  },
  'tool_approval.resolved': {
    summary: 'A tool approval was decided: allowed or denied by a person, expired, or cancelled with its turn.',
    target: { kind: 'tool_approval', field: 'approvalId' },
    data: object('', {
      sessionId: uuidString('The session.'),
      approvalId: uuidString('The approval.'),
      turnId: uuidString('The turn.'),
      toolName: text('The tool.'),
      status: oneOf(
        TOOL_APPROVAL_STATUSES.filter((status) => status !== 'pending'),
        'How it ended.',
      ),
      allowed: { type: 'boolean', description: 'Whether the call may run: true only for `allowed`.' },
      message: text("The person's message to the agent, if any.", { nullable: true }),
    }),
  },
  'computer.created': {
    summary: 'A computer was created: a BYOM machine registered, or a managed one whose provisioning starts.',
    target: { kind: 'computer', field: 'computerId' },
    data: object('', { ...computerNamed(), status: oneOf(COMPUTER_STATUSES, 'Its status.') }),
  },
  'computer.placement_changed': {
    summary:
      'A managed computer created for worker pools moved: `placed` on a worker of its pool, or taken off a worker whose session ended (`worker_left`), to be placed again.',
    target: { kind: 'computer', field: 'computerId' },
    data: object('', {
      computerId: uuidString('The computer.'),
      workerId: { ...uuidString('The worker it is on now; null: none (it waits for one).'), nullable: true },
      poolId: { ...uuidString("That worker's pool; null with no worker."), nullable: true },
      reason: oneOf(['placed', 'worker_left'], 'Why it moved.'),
    }),
  },
  'computer.status_changed': {
    summary: "A computer's status or one of its provisioning steps changed; `from` equals `to` when only a step moved.",
    target: { kind: 'computer', field: 'computerId' },
    data: object('', {
      computerId: uuidString('The computer.'),
      provider: text('`byom` or `local`.'),
      from: oneOf(COMPUTER_STATUSES, 'Its status before.'),
      to: oneOf(COMPUTER_STATUSES, 'Its status now.'),
      step: {
        ...object('The provisioning step that moved, with its error when it failed; null when none did.', {
          stepId: text('`create-computer`, `clone-repos` or `install-dependencies`.'),
          status: text("The step's status now."),
          error: text('Why it failed.', { nullable: true }),
        }),
        nullable: true,
      },
    }),
  },
  'computer.deleted': {
    summary: 'A computer was deleted: its agent token stops working, and the agent the server ran for a `local` one is stopped.',
    target: { kind: 'computer', field: 'computerId' },
    data: object('', computerNamed()),
  },
  'worker_pool.created': {
    summary: 'An owner, manager or the operator created a worker pool (seen by owners and managers).',
    target: { kind: 'worker_pool', field: 'poolId' },
    data: workerPool(),
  },
  'worker_pool.updated': {
    summary: 'A worker pool was renamed or its settings changed (seen by owners and managers).',
    target: { kind: 'worker_pool', field: 'poolId' },
    data: workerPool(),
  },
  'worker_pool.deleted': {
    summary: 'A worker pool was deleted, with its enrollment tokens (seen by owners and managers).',
    target: { kind: 'worker_pool', field: 'poolId' },
    data: workerPool(),
  },
  'enrollment_token.created': {
    summary: "A worker pool's enrollment token was created; the token itself is never in an event (seen by owners and managers).",
    target: { kind: 'enrollment_token', field: 'tokenId' },
    data: enrollmentToken(),
  },
  'enrollment_token.revoked': {
    summary: "A worker pool's enrollment token was revoked: it registers no more workers (seen by owners and managers).",
    target: { kind: 'enrollment_token', field: 'tokenId' },
    data: enrollmentToken(),
  },
  'worker.joined': {
    summary: 'A worker registered into a pool with one of its enrollment tokens (seen by owners and managers).',
    target: { kind: 'worker', field: 'workerId' },
    data: object('', {
      workerId: uuidString('The worker.'),
      poolId: uuidString('Its pool.'),
      name: text('Its name.'),
      hostname: text("Its machine's host name."),
      labels: { type: 'array', items: { type: 'string' }, description: 'Its labels.' },
      capacity: object("What it can hold (computers after the pool's cap).", {
        computers: { type: 'integer' },
        cpus: { type: 'integer' },
        memoryMb: { type: 'integer' },
        diskMb: { type: 'integer' },
      }),
      sandboxed: { type: 'boolean', description: 'Whether it runs computers in the bubblewrap sandbox.' },
      version: text('Its version of agent-platform.'),
    }),
  },
  'worker.left': {
    summary:
      "A worker's session ended (seen by owners and managers): `left` (it shut down), `lost` (no heartbeat within WORKER_LEASE_MS), `revoked` (its enrollment token was) or `evicted`.",
    target: { kind: 'worker', field: 'workerId' },
    data: object('', {
      workerId: uuidString('The worker.'),
      poolId: uuidString('Its pool.'),
      name: text('Its name.'),
      reason: oneOf(['left', 'lost', 'revoked', 'evicted'], 'Why.'),
    }),
  },
  'controls.revised': {
    summary: 'An owner or manager changed the enterprise controls: `revision` is now in force.',
    target: { kind: 'enterprise_controls', field: 'revision' },
    data: object('', {
      revision: { type: 'integer', minimum: 1, description: 'The revision now in force.' },
      userId: uuidString('Who changed them.'),
      changedSettings: { type: 'array', items: { type: 'string' }, description: 'The top-level settings the revision changed.' },
    }),
  },
  'readiness.report_created': {
    summary: 'A readiness report was uploaded.',
    target: { kind: 'readiness_report', field: 'reportId' },
    data: object('', {
      reportId: text('The report.'),
      repoId: text('Its repository.'),
      repoUrl: text("The repository's URL."),
      level: { type: 'integer', description: 'The level the repository reached.' },
      uploadedBy: text('Who uploaded it.'),
    }),
  },
  'api_key.created': {
    summary: 'An API key was created (its secret is never in an event).',
    target: { kind: 'api_key', field: 'apiKeyId' },
    data: object('', {
      apiKeyId: uuidString('The key.'),
      userId: uuidString('Whose key it is.'),
      name: text('Its name.'),
      prefix: text('The first characters of the key, as the keys list shows them.'),
      expiresAt: { type: 'integer', nullable: true, description: 'When it expires (Unix ms), or null.' },
    }),
  },
  'api_key.revoked': {
    summary: "An API key was revoked: by its user, an owner or manager, the operator, or with its user's removal.",
    target: { kind: 'api_key', field: 'apiKeyId' },
    data: object('', { apiKeyId: uuidString('The key.'), userId: uuidString('Whose key it was.'), name: text('Its name.'), prefix: text('Its prefix.') }),
  },
  'member.changed': {
    summary: 'A user or service account was added to the organization, changed (role, name) or removed.',
    target: { kind: 'user', field: 'userId' },
    data: object('', {
      userId: uuidString('The user.'),
      email: text('Their address.'),
      name: text('Their name.'),
      role: oneOf(ROLES, 'Their role (after the change).'),
      kind: oneOf(USER_KINDS, '`human` or `service_account`.'),
      change: oneOf(['added', 'updated', 'removed'], 'What happened.'),
    }),
  },
  'webhook.created': {
    summary: 'An owner or manager created a webhook.',
    target: { kind: 'webhook', field: 'webhookId' },
    data: webhook(),
  },
  'webhook.updated': {
    summary: 'A webhook was changed (`changes` names the fields; `secret` when its secret was rotated).',
    target: { kind: 'webhook', field: 'webhookId' },
    data: webhook({ changes: { type: 'array', items: { type: 'string' }, description: 'The fields changed.' } }),
  },
  'webhook.deleted': {
    summary: 'A webhook was deleted, with its pending deliveries.',
    target: { kind: 'webhook', field: 'webhookId' },
    data: webhook(),
  },
  'webhook.disabled': {
    summary: 'The server disabled a webhook whose deliveries kept failing for WEBHOOK_DISABLE_AFTER_MS; PATCH `enabled: true` turns it back on.',
    target: { kind: 'webhook', field: 'webhookId' },
    data: webhook({
      reason: oneOf(['endpoint_failing'], 'Why.'),
      failingSince: { type: 'integer', description: 'Unix ms of the first failed attempt since its last success.' },
      lastError: text("The last attempt's outcome: a status code, or the network error."),
    }),
  },
};

/** Every public event type, sorted: what webhooks and `types` filters may name. */
export const EVENT_TYPES: EventType[] = (Object.keys(EVENT_CATALOGUE) as EventType[]).sort();

/** Whether `value` names a public event type (a key of the catalogue, never an inherited property). */
export function isEventType(value: string): value is EventType {
  return Object.prototype.hasOwnProperty.call(EVENT_CATALOGUE, value);
}

/** The catalogue as a Markdown table (type and meaning), for route descriptions. */
export function eventTypesTable(): string {
  return '| type | meaning |\n|---|---|\n' + EVENT_TYPES.map((type) => `| \`${type}\` | ${EVENT_CATALOGUE[type].summary} |`).join('\n');
}

/** `status_changed` → `StatusChanged`, as `eventSchemaName` writes it, so that `ref` knows the schemas' names. */
type PascalCase<Text extends string> = Text extends `${infer Head}.${infer Tail}`
  ? `${PascalCase<Head>}${PascalCase<Tail>}`
  : Text extends `${infer Head}_${infer Tail}`
    ? `${Capitalize<Head>}${PascalCase<Tail>}`
    : Capitalize<Text>;

/** `session.status_changed` → `SessionStatusChangedEvent`. */
export function eventSchemaName<Type extends EventType>(type: Type): `${PascalCase<Type>}Event` {
  return `${type
    .split(/[._]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('')}Event` as `${PascalCase<Type>}Event`;
}

const ACTOR: SchemaObject = {
  type: 'object',
  nullable: true,
  description:
    'Who caused the event; null when nobody did. Streams, lists and webhooks give `kind` and the ids; the audit log adds who it was and from where ' +
    '(`email`, `role`, `credential`, `credentialId`, `ip`, `requestId`).',
  required: ['kind'],
  properties: {
    kind: oneOf(
      ['user', 'computer', 'worker', 'operator', 'system'],
      "`user` (a person or service account, by API key or JWT), `computer` (its agent token), `worker` (a worker machine's token), `operator` (the CLI), `system` (the server's own work).",
    ),
    userId: uuidString("The user (for a computer: the computer's owner, whom its agent acts for)."),
    computerId: uuidString('The computer whose agent token was used.'),
    workerId: uuidString('The worker whose token was used.'),
    email: text("Audit log only: the user's address at the time."),
    role: oneOf(ROLES, "Audit log only: the user's role at the time."),
    credential: oneOf(['api_key', 'jwt', 'agent_token'], 'Audit log only: how the caller authenticated.'),
    credentialId: uuidString('Audit log only: the API key used.'),
    ip: text("Audit log only: the client's address."),
    requestId: text("Audit log only: the request's `x-request-id`."),
  },
};

function envelope(type: EventType, doc: EventTypeDoc): SchemaObject {
  return {
    type: 'object',
    description: doc.summary,
    required: ['id', 'seq', 'type', 'occurredAt', 'organizationId', 'sessionId', 'target', 'actor', 'data'],
    properties: {
      id: uuidString('Unique: de-duplicate on it.'),
      seq: {
        type: 'integer',
        minimum: 1,
        description: "The organization's sequence number: 1, 2, 3... in commit order. The SSE `id`, `Last-Event-ID` and `after` use it.",
      },
      type: { type: 'string', enum: [type] },
      occurredAt: { type: 'integer', description: 'When it happened (Unix ms).' },
      organizationId: uuidString('Your organization.'),
      sessionId: nullableUuid('The session it belongs to (its stream carries it), or null.'),
      target: {
        type: 'object',
        required: ['kind', 'id'],
        description: `What it is about: \`${doc.target.kind}\`, whose id is \`data.${doc.target.field}\`.`,
        properties: { kind: { type: 'string', enum: [doc.target.kind] }, id: { type: 'string' } },
      },
      actor: ref('EventActor'),
      data: ref(`${eventSchemaName(type)}Data`),
    },
  };
}

const schemas: Record<string, SchemaObject> = { EventActor: ACTOR };
for (const type of EVENT_TYPES) {
  const doc = EVENT_CATALOGUE[type];
  schemas[eventSchemaName(type)] = envelope(type, doc);
  schemas[`${eventSchemaName(type)}Data`] = { ...doc.data, description: doc.summary };
}
schemas.Event = {
  description: "One event of the log, as streams, lists, the audit log and webhooks give it; `type` says which (see each type's schema).",
  oneOf: EVENT_TYPES.map((type) => ref(eventSchemaName(type))),
  discriminator: { propertyName: 'type', mapping: Object.fromEntries(EVENT_TYPES.map((type) => [type, ref(eventSchemaName(type)).$ref])) },
};

/** The live-only event of streams (see LiveEvents): an envelope without `id`, `seq`, `target` and `actor`, as it is in no log. */
schemas.MessageDeltaEvent = {
  type: 'object',
  description:
    'Not in the spec; clients may ignore it; the stored messages stay whole and final. A piece of what a model is writing in a turn, or of what its ' +
    'tool prints, sent to open event streams as the agent sends it (`POST /api/v0/agent/sessions/{sessionId}/deltas`), without an SSE `id:` line: never ' +
    'stored, numbered, listed, replayed or sent to webhooks. `data.kind` says what it is: `text` (absent from servers before kinds: read it so), the ' +
    "answer; `thinking`, the model's reasoning; `tool_input`, a tool call's arguments as the model writes them; `tool_output`, a running tool's output " +
    '(these two with `toolUseId` and `toolName`). Concatenate the `text` of one `turnId`, `step` and `kind` (and `toolUseId`) in order. The `message.added` ' +
    'of the answer replaces its `text`, `thinking` and `tool_input` (a delta may still arrive after it: drop those of a step whose message you have); ' +
    "a tool's output comes after its step's message, and the `message.added` of the `tool_result` with its `toolUseId` replaces it. Deltas may be lost " +
    '(a slow client, a failed send): the messages are what counts. ' +
    "Sent only to callers who may read the session, where the organization's `messageHistory` feature is on (the same for every kind: whoever may read " +
    'the stored thinking and tool results gets their deltas).',
  required: ['type', 'occurredAt', 'organizationId', 'sessionId', 'data'],
  properties: {
    type: { type: 'string', enum: ['message.delta'] },
    occurredAt: { type: 'integer', description: 'When the server got it (Unix ms).' },
    organizationId: uuidString('Your organization.'),
    sessionId: uuidString('The session.'),
    data: object(
      '',
      {
        sessionId: uuidString('The session.'),
        turnId: uuidString('The turn.'),
        step: {
          type: 'integer',
          minimum: 0,
          description: "The model call within the turn (0, 1, 2...): each is a new assistant message. A tool's output is of the step whose answer called it.",
        },
        kind: {
          type: 'string',
          enum: [...MESSAGE_DELTA_KINDS],
          default: 'text',
          description:
            '`text`, `thinking`, `tool_input` or `tool_output`: what `text` is a piece of. This server always sends it; take one without it as `text`.',
        },
        toolUseId: text('With `tool_input` and `tool_output` only: the tool call (the `id` of its `tool_use` block).'),
        toolName: text('With `tool_input` and `tool_output` only: the tool called.'),
        text: text('The next piece (1 to 16,384 characters).'),
      },
      ['kind', 'toolUseId', 'toolName'],
    ),
  },
};

/** The events are published only (requests never carry events); the query strings are validated. */
export const eventSchemas = new SchemaRegistry('events').add({ ...schemas, ...EVENT_QUERIES });

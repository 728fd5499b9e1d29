import { MESSAGE_DELTA_KINDS, TOOL_DELTA_KINDS } from '../../../platform/events';
import type { SchemaName } from '../../../platform/http/api-schema';
import { closedObject, NO_CONTROL_CHARACTERS, ref, SchemaObject, SchemaRegistry } from '../../../platform/http/json-schema';
import { AGENT_MESSAGE_ROLES, IMAGE_MEDIA_TYPES, MESSAGE_ROLES, USER_MESSAGE_SOURCES } from '../domain/message';
import {
  API_PROVIDER_LOCKS,
  AUTONOMY_LEVELS,
  AUTONOMY_MODES,
  INTERACTION_MODES,
  PROVIDER_LOCKS,
  REASONING_EFFORTS,
  NO_EFFECT_SESSION_SETTINGS,
  TOKEN_USAGE_FIELDS,
} from '../domain/session-settings';
import { markNoEffect, SETTING_WARNINGS_SCHEMA } from '../../../platform/http/no-effect';
import { SESSION_STATUSES } from '../domain/session-status';
import { TOOL_APPROVAL_STATUSES } from '../domain/tool-approval';
import { ATTACHMENT_LIMITS, HOOK_LIMITS, THINKING_SIGNATURE_PROVIDERS } from '../domain/limits';
import { SESSION_QUERIES } from './session-queries';

/** The most text one `message.delta` carries (characters). */
export const MESSAGE_DELTA_MAX_CHARS = 16_384;

/**
 * The Sessions module's JSON Schemas: the spec's Session, Message and content blocks (closed
 * objects, as the spec requires), and the request bodies. Ajv validates requests against them and
 * the OpenAPI document publishes the very same schemas.
 */
const str = (description?: string, extra: SchemaObject = {}): SchemaObject => ({ type: 'string', ...(description ? { description } : {}), ...extra });
const tag = (value: string): SchemaObject => ({ type: 'string', enum: [value] });
const closed = closedObject;
const anyOfTypes = (names: SchemaName[]): SchemaObject => ({
  type: 'object',
  oneOf: names.map(ref),
  discriminator: { propertyName: 'type' },
});

const base64 = (maxLength: number, what: string): SchemaObject =>
  str(`${what}, base64-encoded (standard alphabet, padded). At most ${maxLength.toLocaleString('en')} characters.`, {
    minLength: 1,
    maxLength,
  });

const contentBlocks: Record<string, SchemaObject> = {
  TextBlock: closed(['type', 'text'], { type: tag('text'), text: str(), id: str() }, 'Plain text.'),
  ImageSource: closed(
    ['type', 'data', 'mediaType'],
    {
      type: tag('base64'),
      data: base64(ATTACHMENT_LIMITS.imageBase64Chars, 'The image bytes'),
      mediaType: { type: 'string', enum: [...IMAGE_MEDIA_TYPES], description: 'Must match the bytes (checked by their signature).' },
    },
    'A base64 image.',
  ),
  ImageBlock: closed(['type', 'source'], { type: tag('image'), source: ref('ImageSource'), id: str() }),
  ThinkingBlock: closed(['type', 'signature', 'thinking'], {
    type: tag('thinking'),
    signature: str(),
    thinking: str(),
    id: str(),
    signatureProvider: {
      type: 'string',
      enum: [...THINKING_SIGNATURE_PROVIDERS],
      description: 'Who issued the signature. The spec names one of its eight providers; the others are ours (vendors anonymised as in the spec).',
    },
    durationMs: { type: 'number', minimum: 0 },
  }),
  RedactedThinkingBlock: closed(['type', 'data'], { type: tag('redacted_thinking'), data: str(), id: str() }),
  ToolUseBlock: closed(['type', 'id', 'input', 'name'], {
    type: tag('tool_use'),
    id: str(),
    input: { type: 'object', description: 'Free-form tool input.' },
    name: str(),
    thoughtSignature: str(),
  }),
  ToolResultBlock: closed(['type', 'toolUseId'], {
    type: tag('tool_result'),
    toolUseId: str(),
    id: str(),
    isError: { type: 'boolean' },
    content: {
      type: ['string', 'array'] as unknown as 'string',
      description: 'A string, or an array of text, image and document blocks.',
      maxItems: ATTACHMENT_LIMITS.blocksPerMessage,
      items: anyOfTypes(['TextBlock', 'ImageBlock', 'DocumentBlock']),
    } as SchemaObject,
  }),
  PdfDocumentSource: closed(
    ['type', 'mediaType', 'data'],
    {
      type: tag('base64'),
      mediaType: tag('application/pdf'),
      data: base64(ATTACHMENT_LIMITS.pdfBase64Chars, 'The PDF bytes'),
      parsedData: str('Text extracted from the PDF.'),
      name: str(),
      path: str(),
    },
    'A PDF document.',
  ),
  TextDocumentSource: closed(
    ['type', 'mediaType', 'data'],
    {
      type: tag('text'),
      mediaType: tag('text/plain'),
      data: str("The file's text itself (not base64).", { maxLength: ATTACHMENT_LIMITS.textFileChars }),
      name: str(),
      mime: str("The file's own media type, e.g. `text/markdown` or `application/json`."),
    },
    'A text file.',
  ),
  DocumentBlock: closed(['type', 'source'], {
    type: tag('document'),
    source: { type: 'object', oneOf: [ref('PdfDocumentSource'), ref('TextDocumentSource')], discriminator: { propertyName: 'type' } },
    id: str(),
  }),
  ContentBlock: {
    ...anyOfTypes(['TextBlock', 'ImageBlock', 'ThinkingBlock', 'RedactedThinkingBlock', 'ToolUseBlock', 'ToolResultBlock', 'DocumentBlock']),
    description: 'One content block, selected by `type`. No block accepts other properties.',
  },
};

/** The Message fields every writer may set (all optional), shared by Message and the agent's input. */
const optionalMessageFields: Record<string, SchemaObject> = {
  parentId: str('The message this one follows or answers.'),
  visibility: { type: 'string', enum: ['both', 'llm_only', 'user_only'] },
  vendorAMessageId: str(),
  vendorAPhase: { type: 'string', nullable: true, enum: ['commentary', 'final_answer', null] },
  vendorAEncryptedContent: str(),
  vendorAReasoningId: str(),
  vendorAReasoningSummary: str(),
  vendorBThoughtSignature: str("Deprecated: use a thinking block's `signature` with `signatureProvider`.", { deprecated: true }),
  chatCompletionReasoningField: { type: 'string', enum: ['reasoning', 'reasoning_content'] },
  chatCompletionReasoningContent: str(),
  isUserVisible: { type: 'boolean' },
  isError: { type: 'boolean' },
  modelId: str(),
  routerId: str(),
  reasoningEffort: { type: 'string', enum: [...REASONING_EFFORTS] },
  hookEventName: str(),
  hookMatcher: str(),
  hookCommands: {
    type: 'array',
    maxItems: HOOK_LIMITS.commandsPerMessage,
    items: closed(['command'], { command: str(), timeout: { type: 'number', description: 'Seconds.' } }),
  },
  hookStatus: { type: 'string', enum: ['executing', 'completed', 'error'] },
  hookResults: {
    type: 'array',
    maxItems: HOOK_LIMITS.commandsPerMessage,
    items: closed(['exitCode', 'stdout', 'stderr'], {
      exitCode: { type: 'number' },
      stdout: str(),
      stderr: str(),
      suppressOutput: { type: 'boolean' },
    }),
  },
  hookToolCallId: str(),
  hiddenFromUserViews: { type: 'boolean' },
  hookStartTime: { type: 'number' },
  hookEndTime: { type: 'number' },
  isParallelExecution: { type: 'boolean' },
  parallelGroupId: str(),
};

/** The optional fields kept in a message's `attributes` (all but parentId). */
export const MESSAGE_ATTRIBUTE_FIELDS = Object.keys(optionalMessageFields).filter((field) => field !== 'parentId');

const content = (minItems: number): SchemaObject => ({
  type: 'array',
  minItems,
  maxItems: ATTACHMENT_LIMITS.blocksPerMessage,
  items: ref('ContentBlock'),
});

const toolApprovalRules: SchemaObject = closed(
  [],
  {
    tools: {
      type: 'array',
      maxItems: 100,
      items: str(undefined, { minLength: 1, maxLength: 128 }),
      description:
        "Tools every call of which needs approval, by name as the agent knows them (the reference agent's: `Execute`, `Create`, `Edit`, `ApplyPatch`, `Task`...).",
    },
    commandPatterns: {
      type: 'array',
      maxItems: 500,
      items: str(undefined, { minLength: 1, maxLength: 2048 }),
      description:
        'Commands (the `Execute` tool) that need approval, matched as the command denylist matches: a command equal to a pattern or starting with it and a space, ' +
        'or matching it as a glob (`git push*`, `rm -rf*`), wherever it stands in the command line. A command line that cannot be checked needs approval too.',
    },
    timeoutSeconds: {
      type: 'integer',
      minimum: 1,
      maximum: 86_400,
      description:
        "How long a request waits for an answer before the call is denied (`expired`). Default 600 (10 minutes); the shorter of the organization's and the session's applies.",
    },
  },
  'Which tool calls an agent must have a person approve before running them.',
);

const sessionSettingsFields: Record<string, SchemaObject> = {
  model: str(
    "The model the agent answers with: a custom model's id, or the agent's own model's; `router`: the model router chooses each turn. " +
      'An agent that cannot reach the model named refuses the turn, saying why.',
    { maxLength: 200 },
  ),
  reasoningEffort: { type: 'string', enum: [...REASONING_EFFORTS] },
  interactionMode: {
    type: 'string',
    enum: [...INTERACTION_MODES],
    description:
      '`auto`: the agent works on its own. `spec`: read-only tools, and a plan for an answer. `ask`: every call that can change something waits for a ' +
      "person's approval (tool approvals).",
  },
  autonomyLevel: { type: 'string', enum: [...AUTONOMY_LEVELS] },
  autonomyMode: {
    type: 'string',
    enum: [...AUTONOMY_MODES],
    description:
      '`unattended`: nothing waits for a person; a call that would need an approval is not run, and its result says why. `normal`: calls wait as asked.',
  },
  specModeModel: str(undefined, { maxLength: 200 }),
  specModeReasoningEffort: { type: 'string', enum: [...REASONING_EFFORTS] },
  providerLock: {
    type: 'string',
    enum: [...PROVIDER_LOCKS],
    description:
      "Model-provider lock: the agent answers only with a model of this provider (the organization's custom models are `custom`; its own model " +
      '`generic-chat-completion-api` or `anthropic`), and refuses the turn otherwise.',
  },
  providerLockTimestamp: str('When the provider lock was set (ISO 8601).', { maxLength: 64 }),
  apiProviderLock: {
    type: 'string',
    enum: [...API_PROVIDER_LOCKS],
    description: 'API lock: the agent answers only with a model it speaks to in this API (`messages`, `chat-completions`), and refuses the turn otherwise.',
  },
  archivedAt: str(
    'When the session was archived (an ISO 8601 date-time). An archived session leaves the default session list and takes no new messages ' +
      '(409 `session_archived`) until this is set back to null.',
    { maxLength: 64, format: 'date-time' },
  ),
  tags: {
    type: 'array',
    maxItems: 50,
    items: closed(['name', 'metadata'], { name: str(undefined, { minLength: 1, maxLength: 100 }), metadata: { type: 'object' } }),
  },
  enabledToolIds: {
    type: 'array',
    maxItems: 500,
    items: str(undefined, { maxLength: 200 }),
    description:
      'The only tools the agent offers the model; an empty list offers none. Built-in tools by name (`Read`, `Execute`, `Task`...), MCP tools as ' +
      '`mcp__{server}__{tool}` or `{server}/{tool}`; case does not matter. A call to any other tool is refused, not run.',
  },
  disabledToolIds: {
    type: 'array',
    maxItems: 500,
    items: str(undefined, { maxLength: 200 }),
    description: 'Tools the agent does not offer, and refuses if the model calls them; named as in `enabledToolIds`, and winning over it.',
  },
  toolApproval: {
    ...toolApprovalRules,
    description:
      "Not in the spec. Tool calls that wait for a person's approval in this session, on top of the organization's `toolApproval` control: " +
      'a session can ask for more approvals, never fewer, and only shorten the timeout.',
  } as SchemaObject,
};

markNoEffect({ SessionSettings: { properties: sessionSettingsFields } }, 'SessionSettings', NO_EFFECT_SESSION_SETTINGS);

/** The same fields, each also accepting null. */
function nullable(fields: Record<string, SchemaObject>): Record<string, SchemaObject> {
  return Object.fromEntries(
    Object.entries(fields).map(([name, schema]) => [
      name,
      { ...schema, nullable: true, ...(Array.isArray(schema.enum) ? { enum: [...(schema.enum as unknown[]), null] } : {}) },
    ]),
  );
}

const tokenUsageFields = [...TOKEN_USAGE_FIELDS];
const tokenCount: SchemaObject = { type: 'integer', minimum: 0, maximum: 1_000_000_000_000 };

/** A turn to work on, as a claim hands it out. */
const WORK: SchemaObject = {
  type: 'object',
  required: ['turnId', 'sessionId', 'leaseExpiresAt', 'session', 'messages', 'messagesCursor'],
  properties: {
    turnId: { type: 'string' },
    sessionId: { type: 'string' },
    leaseExpiresAt: { type: 'integer', description: 'Unix ms.' },
    session: ref('Session'),
    messages: {
      type: 'array',
      items: ref('Message'),
      description: 'The user messages this turn answers, in order, as many as fit in `MESSAGE_PAGE_MAX_BYTES` (the first always comes).',
    },
    messagesCursor: {
      type: 'string',
      nullable: true,
      description:
        "Null when `messages` holds all of the turn's user messages. Otherwise read on from this cursor with " +
        "`GET /api/v0/agent/sessions/{sessionId}/messages` and take its `user` messages: they are the rest of the turn's.",
    },
  },
};

export const sessionSchemas = new SchemaRegistry('sessions').add({
  ...contentBlocks,
  ...SESSION_QUERIES,
  Message: closed(
    ['id', 'role', 'content', 'createdAt', 'updatedAt'],
    {
      id: str(),
      role: { type: 'string', enum: [...MESSAGE_ROLES] },
      content: { type: 'array', items: ref('ContentBlock') },
      createdAt: { type: 'number', description: 'Unix ms.' },
      updatedAt: { type: 'number', description: 'Unix ms.' },
      userMessageSource: { type: 'string', enum: [...USER_MESSAGE_SOURCES], description: 'Where a user message came from.' },
      ...optionalMessageFields,
    },
    'A message of a session. Accepts and carries no other properties.',
  ),
  TokenUsage: closed(tokenUsageFields, Object.fromEntries(tokenUsageFields.map((field) => [field, { type: 'number' }]))),
  SessionSettings: closed(
    [],
    {
      ...sessionSettingsFields,
      assistantActiveTimeMs: { type: 'number', description: 'Time agents spent working on the session, in ms (from the agent channel).' },
      tokenUsage: { ...ref('TokenUsage'), description: 'Tokens used by the session, all models together (from the agent channel).' } as SchemaObject,
    },
    'Every field is optional. `assistantActiveTimeMs` and `tokenUsage` are kept by the server from agent reports.',
  ),
  Session: closed(['sessionId', 'status', 'messageCount', 'createdAt', 'updatedAt'], {
    sessionId: str(),
    status: { type: 'string', enum: [...SESSION_STATUSES], description: 'Current session execution status.' },
    messageCount: { type: 'integer', description: 'Number of messages in the session.' },
    createdAt: { type: 'integer', description: 'Unix ms.' },
    updatedAt: { type: 'integer', description: 'Unix ms.' },
    title: str(),
    completedAt: { type: 'integer', description: 'Unix ms: when an agent last ended its turn with nothing left to do.' },
    computerId: str('The connected computer.'),
    sessionSettings: ref('SessionSettings'),
    interruptedAt: {
      type: 'integer',
      description: 'Not in the spec. Unix ms: when a user interrupted the running turn, which is stopping. Absent otherwise.',
    },
    pendingToolApprovals: {
      type: 'integer',
      minimum: 1,
      description: "Not in the spec. How many tool calls of the running turn wait for a person's approval (`GET .../tool-approvals`). Absent when none.",
    },
    warnings: {
      ...SETTING_WARNINGS_SCHEMA,
      description: `${SETTING_WARNINGS_SCHEMA.description as string} Only on the answer to a create or update.`,
    } as SchemaObject,
    statusReason: {
      ...ref('StatusReason'),
      description:
        'Not in the spec. Only on a `pending` session that no agent will take for now: no agent asked for work in its queue ' +
        "(its computer's, or the unrouted one) in the last 90 s. Absent otherwise.",
    } as SchemaObject,
  }),
  StatusReason: closed(
    ['code', 'message'],
    {
      code: {
        type: 'string',
        enum: ['no_agent_for_computer', 'no_agent_for_organization'],
        description:
          '`no_agent_for_computer`: the work is routed to a computer whose agent has not asked for work lately. ' +
          '`no_agent_for_organization`: the work has no computer and no agent of the organization (an API key or JWT claiming unrouted work) asked lately.',
      },
      message: str('What is missing and what to do, in words.'),
    },
    'Why a session may wait forever, and what to do about it.',
  ),
  AddMessageResponse: closed(['messageId', 'status'], {
    messageId: str('The id of the created user message.'),
    status: { type: 'string', enum: ['idle', 'pending', 'running'], description: "The session's status after submission." },
    warnings: {
      type: 'array',
      items: ref('StatusReason'),
      description:
        'Not in the spec. Present only when something will keep the message from being answered: today, that no agent will take the ' +
        "session (the same as the session's `statusReason`). The message is stored all the same.",
    },
  }),
  CreateSessionBody: closed([], {
    title: str('Must contain a non-blank character.', { minLength: 1, maxLength: 500, pattern: '\\S' }),
    computerId: str("The computer to connect the session to; it must be one of your organization's (else 404)."),
    sessionSettings: closed(
      [],
      sessionSettingsFields,
      'Settings for the session; `assistantActiveTimeMs` and `tokenUsage` are kept by the server and cannot be set.',
    ),
  }),
  UpdateSessionBody: closed([], {
    title: { type: 'string', nullable: true, minLength: 1, maxLength: 500, pattern: '\\S', description: 'A new title, or null to remove it.' },
    sessionSettings: closed(
      [],
      nullable(sessionSettingsFields),
      'Settings to change; fields not given keep their value, null removes one (`archivedAt: null` unarchives).',
    ),
  }),
  AddMessageBody: closed(['text'], {
    text: str('The message text; must contain a non-blank character.', { minLength: 1, maxLength: ATTACHMENT_LIMITS.textChars }),
    images: {
      type: 'array',
      maxItems: ATTACHMENT_LIMITS.images,
      items: ref('ImageSource'),
      description: 'Base64 images, stored as image blocks after the text.',
    },
    files: {
      type: 'array',
      maxItems: ATTACHMENT_LIMITS.files,
      description:
        'File attachments, stored as document blocks after the images: PDFs as `{type: "base64", mediaType: "application/pdf", data, parsedData?, name?, path?}`, ' +
        'text files as the document text source `{type: "text", mediaType: "text/plain", data: <the text>, name?, mime?}`.',
      items: { type: 'object', oneOf: [ref('PdfDocumentSource'), ref('TextDocumentSource')], discriminator: { propertyName: 'type' } },
    },
    computerId: str("The computer to route the message to; when omitted, the session's computerId is used."),
  }),
  AgentMessageInput: closed(
    ['role', 'content'],
    {
      role: { type: 'string', enum: [...AGENT_MESSAGE_ROLES] },
      content: content(0),
      ...optionalMessageFields,
    },
    'A message written by an agent: the Message schema without the server-assigned `id`, `createdAt` and `updatedAt`, and without `userMessageSource`.',
  ),
  ClaimWorkBody: closed([], {
    computerId: str("Take work routed to this computer. Omitted: the organization's unrouted work."),
    waitMs: { type: 'integer', minimum: 0, maximum: 30_000, description: 'Wait up to this long for work when there is none (long poll). Default 0.' },
  }),
  AgentSessionBody: closed(['text'], {
    text: str('The task: the first message of the session.', { minLength: 1, maxLength: ATTACHMENT_LIMITS.textChars, pattern: '\\S' }),
    title: str('Must contain a non-blank character.', { minLength: 1, maxLength: 500, pattern: '\\S' }),
    sessionSettings: closed([], sessionSettingsFields, 'Settings for the session, as on `POST /api/v0/sessions`.'),
  }),
  ExistingSessionsBody: closed(['sessionIds'], {
    sessionIds: { type: 'array', maxItems: 100, items: { type: 'string', format: 'uuid' }, description: 'Session ids to look up; at most 100.' },
  }),
  ExistingSessions: closed(['existing'], {
    existing: { type: 'array', items: str(), description: 'Those of the ids that name a session the caller may read, in the order given.' },
  }),
  AppendMessagesBody: closed(['turnId', 'messages'], {
    turnId: str('The turn from the claim.'),
    messages: { type: 'array', minItems: 1, maxItems: 100, items: ref('AgentMessageInput') },
  }),
  ReportUsageBody: closed(['turnId', 'model'], {
    turnId: str(),
    model: str(undefined, { minLength: 1, maxLength: 200 }),
    provider: {
      type: 'string',
      enum: [...PROVIDER_LOCKS],
      description:
        'Not in the spec. The provider the model was reached through. On a session with no `providerLock`, the first report that gives it sets ' +
        '`providerLock` (and `providerLockTimestamp`): the session stays on the provider it started with.',
    },
    api: {
      type: 'string',
      enum: [...API_PROVIDER_LOCKS],
      description: 'Not in the spec. The API the model was reached with; on a session with no `apiProviderLock`, the first report that gives it sets it.',
    },
    ...Object.fromEntries(tokenUsageFields.map((field) => [field, tokenCount])),
  }),
  EndTurnBody: closed(['turnId'], {
    turnId: str(),
    assistantActiveTimeMs: {
      type: 'integer',
      minimum: 0,
      maximum: 86_400_000,
      description: "Time the agent worked in this turn, added to the session's total.",
    },
  }),
  TurnBody: closed(['turnId'], { turnId: str() }),
  MessageDeltaBody: {
    ...closed(['turnId', 'step', 'text'], {
      turnId: str('The turn from the claim.'),
      step: {
        type: 'integer',
        minimum: 0,
        maximum: 1_000_000,
        description: "The model call within the turn the text comes from: 0, 1, 2... A tool's output is of the step whose answer called it.",
      },
      kind: {
        type: 'string',
        enum: [...MESSAGE_DELTA_KINDS],
        default: 'text',
        description:
          "What `text` is a piece of: `text` (the default), the answer the model is writing; `thinking`, the model's reasoning as it streams; " +
          "`tool_input`, a tool call's arguments (JSON text) as the model writes them; `tool_output`, a running tool's output (a command's stdout and stderr) as it comes. " +
          'The tool kinds need `toolUseId` and `toolName`; the others refuse them.',
      },
      toolUseId: str('The tool call (the `id` of its `tool_use` block), with `tool_input` and `tool_output` only.', {
        minLength: 1,
        maxLength: 256,
        pattern: NO_CONTROL_CHARACTERS,
      }),
      toolName: str('The tool called, with `tool_input` and `tool_output` only.', { minLength: 1, maxLength: 128, pattern: NO_CONTROL_CHARACTERS }),
      text: str('The next piece of the text (of the answer, the thinking, the arguments or the output, as `kind` says).', {
        minLength: 1,
        maxLength: MESSAGE_DELTA_MAX_CHARS,
      }),
    }),
    // The tool kinds name their call; the others name none.
    if: { required: ['kind'], properties: { kind: { enum: [...TOOL_DELTA_KINDS] } } },
    then: {
      required: ['toolUseId', 'toolName'],
      properties: {
        toolUseId: { 'x-required': "the tool call's id, with kind tool_input and tool_output" },
        toolName: { 'x-required': "the tool's name, with kind tool_input and tool_output" },
      },
    },
    else: {
      properties: {
        toolUseId: { not: {}, 'x-problem': 'is accepted only with kind tool_input or tool_output' },
        toolName: { not: {}, 'x-problem': 'is accepted only with kind tool_input or tool_output' },
      },
    },
  },
  ToolApprovalRules: toolApprovalRules,
  ToolApproval: closed(
    ['approvalId', 'sessionId', 'turnId', 'toolName', 'summary', 'input', 'status', 'requestedAt', 'expiresAt'],
    {
      approvalId: str(),
      sessionId: str(),
      turnId: str('The turn that asked.'),
      toolName: str(),
      toolCallId: str("The model's id of the call."),
      summary: str('What the call does, in one line (the command line, for a command).'),
      input: { type: 'object', description: "The call's arguments." },
      status: {
        type: 'string',
        enum: [...TOOL_APPROVAL_STATUSES],
        description:
          '`pending` waits for a user of the session; `allowed` and `denied` are their answers; `expired`: nobody answered before `expiresAt`, so the call is denied; ' +
          '`cancelled`: the turn ended or was interrupted first.',
      },
      requestedAt: { type: 'integer', description: 'Unix ms.' },
      expiresAt: { type: 'integer', description: 'Unix ms: unanswered by then, the call is denied.' },
      resolvedAt: { type: 'integer', description: 'Unix ms.' },
      message: str('The words that came with the decision; the model gets them with a denial.'),
      resolvedBy: closed(['userId'], { userId: str() }, 'The user who allowed or denied the call.'),
    },
    "A tool call waiting for, or having had, a person's decision.",
  ),
  ToolApprovalResponse: closed(['toolApproval'], { toolApproval: ref('ToolApproval') }),
  ToolApprovalList: closed(['toolApprovals'], {
    toolApprovals: { type: 'array', items: ref('ToolApproval'), description: 'Oldest first.' },
  }),
  DecideToolApprovalBody: closed(['decision'], {
    decision: { type: 'string', enum: ['allow', 'deny'] },
    message: str("Optional words for the agent; with a denial, the model reads them as the call's result.", { minLength: 1, maxLength: 4000 }),
  }),
  RequestToolApprovalBody: closed(['turnId', 'toolName', 'summary'], {
    turnId: str(),
    toolName: str(undefined, { minLength: 1, maxLength: 128 }),
    toolCallId: str(undefined, { minLength: 1, maxLength: 256 }),
    summary: str('What the call does, in one line a person can judge.', { minLength: 1, maxLength: 2000 }),
    input: { type: 'object', maxProperties: 100, description: "The call's arguments, shown to the person deciding. Default {}." },
  }),
  ClaimWorkResponse: {
    type: 'object',
    required: ['work'],
    properties: {
      work: { ...WORK, nullable: true },
    },
  },
  AgentRunStarted: closed(['session', 'work'], {
    session: ref('Session'),
    work: { ...WORK, description: 'The turn of the run, taken by the caller: as a claim answers it.' },
  }),
  HeartbeatResponse: closed(['leaseExpiresAt', 'interrupted'], {
    leaseExpiresAt: { type: 'integer', description: 'Unix ms.' },
    interrupted: {
      type: 'boolean',
      description:
        'True once a user interrupted the turn: stop the model call and the tools, append what you have and end the turn. ' +
        'Heartbeats then no longer renew the lease: past `AGENT_INTERRUPT_GRACE_MS` the server ends the turn itself.',
    },
  }),
});

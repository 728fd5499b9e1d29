/**
 * The agent channel (`/api/v0/agent/...`) as the server's OpenAPI document describes it: each operation's request and
 * answer, picked by name from the types openapi-typescript generates from that document at build time
 * (src/contract/generated/, never committed; bin/agent-platform.js makes it). The agent (src/agent) is a separate
 * program that users run on their own machines: this folder is all it shares with the server, so a change of the
 * channel's contract fails the agent's type check, not a user's turn.
 */
import type { components, paths } from './generated/openapi';

type Schemas = components['schemas'];
type Json<Content> = Content extends { content: { 'application/json': infer Body } } ? Body : never;
/** The JSON body an operation takes. */
type RequestOf<Operation> = Operation extends { requestBody?: infer Body } ? Json<NonNullable<Body>> : never;
/** The JSON body of an operation's answer with this status. */
type AnswerOf<Operation, Status extends number> = Operation extends { responses: { [S in Status]: infer Answer } } ? Json<Answer> : never;
/** The query string an operation reads. */
type QueryOf<Operation> = Operation extends { parameters: { query: infer Query } } ? Query : never;

type Connect = paths['/api/v0/agent/connect']['post'];
type Policy = paths['/api/v0/agent/policy']['get'];
type Claim = paths['/api/v0/agent/claims']['post'];
type Existing = paths['/api/v0/agent/sessions/existing']['post'];
type StartSession = paths['/api/v0/agent/sessions']['post'];
type Conversation = paths['/api/v0/agent/sessions/{sessionId}/messages']['get'];
type Append = paths['/api/v0/agent/sessions/{sessionId}/messages']['post'];
type Usage = paths['/api/v0/agent/sessions/{sessionId}/usage']['post'];
type Beat = paths['/api/v0/agent/sessions/{sessionId}/heartbeat']['post'];
type EndTurn = paths['/api/v0/agent/sessions/{sessionId}/end-turn']['post'];
type Delta = paths['/api/v0/agent/sessions/{sessionId}/deltas']['post'];
type RequestApproval = paths['/api/v0/agent/sessions/{sessionId}/tool-approvals']['post'];
type AwaitApproval = paths['/api/v0/agent/sessions/{sessionId}/tool-approvals/{approvalId}']['get'];
type ReportCatalog = paths['/api/v0/agent/plugin-catalogs']['post'];

export type ConnectRequest = RequestOf<Connect>;
export type ConnectAnswer = AnswerOf<Connect, 200>;

/** The organization's controls as they bind an agent: commands, models, sandbox, network, tool approval... */
export type AgentPolicy = AnswerOf<Policy, 200>;

export type ClaimRequest = RequestOf<Claim>;
export type ExistingSessionsRequest = RequestOf<Existing>;
/** A run the agent starts itself, recorded as a session (`exec`). */
export type StartSessionRequest = RequestOf<StartSession>;
export type StartedSession = AnswerOf<StartSession, 201>;
export type ExistingSessionsAnswer = AnswerOf<Existing, 200>;
export type ClaimAnswer = AnswerOf<Claim, 200>;
/** A turn to work on: its session, the user messages it answers, and the lease to renew. */
export type Work = NonNullable<ClaimAnswer['work']>;
export type SessionSettings = NonNullable<Work['session']['sessionSettings']>;

/** A message as the channel hands it out: stored, with its id and times. */
export type Message = Schemas['Message'];
/** A message as an agent appends it: the server assigns the id and times. */
export type AgentMessage = Schemas['AgentMessageInput'];
export type ContentBlock = Schemas['ContentBlock'];

export type ConversationQuery = QueryOf<Conversation>;
export type ConversationPage = AnswerOf<Conversation, 200>;
export type AppendRequest = RequestOf<Append>;
export type AppendAnswer = AnswerOf<Append, 200>;
export type UsageReport = RequestOf<Usage>;
export type UsageAnswer = AnswerOf<Usage, 200>;
export type HeartbeatRequest = RequestOf<Beat>;
export type Heartbeat = AnswerOf<Beat, 200>;
export type EndTurnRequest = RequestOf<EndTurn>;
export type EndTurnAnswer = AnswerOf<EndTurn, 200>;
export type MessageDeltaRequest = RequestOf<Delta>;

export type ToolApprovalRequest = RequestOf<RequestApproval>;
export type ToolApprovalQuery = QueryOf<AwaitApproval>;
/** The answer of both asking for an approval (201) and waiting for its decision (200). */
export type ToolApprovalAnswer = AnswerOf<RequestApproval, 201> & AnswerOf<AwaitApproval, 200>;
/** A tool call waiting for, or having had, a person's decision. */
export type ToolApproval = ToolApprovalAnswer['toolApproval'];

/** What an agent found of one of the organization's marketplaces: the plugins its manifest lists at a commit, or why it could not read it. */
export type PluginCatalogReport = RequestOf<ReportCatalog>;
/** A plugin as a marketplace's manifest lists it, each field capped (PLUGIN_CATALOG_LIMITS). */
export type CatalogPlugin = Schemas['CatalogPlugin'];

/** What the channel answers when it refuses (4xx): `metadata.code` says why, for programs. */
export type ChannelError = Schemas['V0ErrorSchema'];

import type { CloudModelConfig } from './models/cloud-credentials';
import { randomUUID } from 'node:crypto';
import { ChannelRefusal, retryAfterMs, retryingRequest } from '../contract/retrying-request';
import type {
  AgentMessage,
  AgentPolicy,
  AppendAnswer,
  AppendRequest,
  ClaimAnswer,
  ClaimRequest,
  ConnectAnswer,
  ConnectRequest,
  ConversationPage,
  ConversationQuery,
  EndTurnAnswer,
  EndTurnRequest,
  Heartbeat,
  HeartbeatRequest,
  Message,
  MessageDeltaRequest,
  ToolApproval,
  ToolApprovalAnswer,
  ToolApprovalQuery,
  ToolApprovalRequest,
  PluginCatalogReport,
  UsageAnswer,
  UsageReport,
  Work,
  ExistingSessionsAnswer,
  StartedSession,
  StartSessionRequest,
  ExistingSessionsRequest,
} from '../contract/agent-channel';

export { ChannelRefusal };

export interface ClientOptions {
  baseUrl: string;
  token: string;
  /**
   * How long a request is retried on network errors, 429, 502, 503 and 504 (each retry with the same
   * Idempotency-Key): RETRY_WINDOW_MS when not set. 0: one attempt.
   */
  retryWindowMs?: number;
  log?: (line: string) => void;
}

/**
 * How long a request is retried: a server restart (a deploy, a crash and its supervisor) takes seconds to a minute, and
 * the turn's lease (AGENT_LEASE_MS, 5 minutes by default) outlasts this, so the turn is still the agent's when the server is back.
 */
export const RETRY_WINDOW_MS = 120_000;
/** A delta is worth sending only now: a short timeout, no retry. */
const DELTA_TIMEOUT_MS = 5_000;

/**
 * The agent channel over HTTP. Every write carries an Idempotency-Key kept across its retries, so a
 * request whose answer was lost (network error, server restart) is retried without being done twice.
 */
/** What the agent needs of the agent channel: the server's (PlatformClient), or a run's own (headless.ts), which reports no plugin catalog. */
export type AgentChannel = Partial<Pick<PlatformClient, 'reportPluginCatalog'>> &
  Pick<
    PlatformClient,
    | 'connect'
    | 'policy'
    | 'cloudModelAccess'
    | 'claim'
    | 'existingSessions'
    | 'conversation'
    | 'append'
    | 'usage'
    | 'heartbeat'
    | 'delta'
    | 'requestApproval'
    | 'awaitApproval'
    | 'endTurn'
  >;

export class PlatformClient {
  private readonly retryWindowMs: number;

  constructor(private readonly options: ClientOptions) {
    this.retryWindowMs = options.retryWindowMs ?? RETRY_WINDOW_MS;
  }

  connect(hostname: string): Promise<ConnectAnswer> {
    return this.post<ConnectAnswer>('/api/v0/agent/connect', { hostname } satisfies ConnectRequest);
  }

  policy(): Promise<AgentPolicy> {
    return this.request<AgentPolicy>('GET', '/api/v0/agent/policy');
  }

  /** A custom model's cloudModelConfig with its commands revealed, for reaching it with this computer's cloud credentials. */
  cloudModelAccess(customModelId: string): Promise<CloudModelConfig> {
    return this.request<CloudModelConfig>('GET', `/api/v0/agent/models/${encodeURIComponent(customModelId)}/cloud`);
  }

  /** Waits up to `waitMs` for work; `signal` ends the wait (a claim the server granted meanwhile is taken back when its lease runs out). */
  async claim(waitMs: number, signal?: AbortSignal): Promise<Work | null> {
    const { work } = await this.request<ClaimAnswer>('POST', '/api/v0/agent/claims', { waitMs } satisfies ClaimRequest, randomUUID(), signal);
    // The rest of a turn too large for one answer: the user messages after the cursor, page by page.
    for (let cursor = work?.messagesCursor; work && cursor;) {
      const page = await this.conversation(work.sessionId, work.turnId, cursor);
      work.messages.push(...page.messages.filter((message) => message.role === 'user'));
      cursor = page.nextCursor;
    }
    return work;
  }

  /** Records a run this agent starts itself as a session of its computer; a ChannelRefusal `cloud_session_sync_off` when the organization keeps such runs off the server. */
  startSession(body: StartSessionRequest): Promise<StartedSession> {
    return this.post<StartedSession>('/api/v0/agent/sessions', body);
  }

  /** Which of these sessions (at most 100) still exist, for the caller. */
  async existingSessions(sessionIds: string[]): Promise<string[]> {
    const answer = await this.post<ExistingSessionsAnswer>('/api/v0/agent/sessions/existing', { sessionIds } satisfies ExistingSessionsRequest);
    return answer.existing;
  }

  /** One page of the session's messages, oldest first, for the holder of its running turn. */
  async conversation(sessionId: string, turnId: string, cursor?: string): Promise<{ messages: Message[]; nextCursor: string | null }> {
    const query: ConversationQuery = { turnId, limit: '100', ...(cursor ? { cursor } : {}) };
    const page = await this.request<ConversationPage>('GET', `/api/v0/agent/sessions/${sessionId}/messages?${searchParams(query)}`);
    return { messages: page.messages, nextCursor: page.pagination.nextCursor };
  }

  append(sessionId: string, turnId: string, messages: AgentMessage[]): Promise<AppendAnswer> {
    return this.post<AppendAnswer>(`/api/v0/agent/sessions/${sessionId}/messages`, { turnId, messages } satisfies AppendRequest);
  }

  usage(sessionId: string, body: UsageReport): Promise<UsageAnswer> {
    return this.post<UsageAnswer>(`/api/v0/agent/sessions/${sessionId}/usage`, body);
  }

  /** Renews the turn's lease; `interrupted` says a user interrupted the turn. */
  heartbeat(sessionId: string, turnId: string): Promise<Heartbeat> {
    // No Idempotency-Key: a heartbeat done twice does no harm, and one a second would fill the server's key store.
    // No retry either: the next beat is a second away, and beats resume by themselves once the server is back.
    return this.request<Heartbeat>('POST', `/api/v0/agent/sessions/${sessionId}/heartbeat`, { turnId } satisfies HeartbeatRequest, undefined, undefined, 0);
  }

  /**
   * Sends a piece of the text the model is writing to the session's live streams (`message.delta`):
   * once, with a short timeout; a failure throws (the caller drops the text: the message it appends stays whole).
   */
  async delta(sessionId: string, body: MessageDeltaRequest): Promise<void> {
    const res = await fetch(`${this.options.baseUrl}/api/v0/agent/sessions/${sessionId}/deltas`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.options.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(DELTA_TIMEOUT_MS),
    });
    await res.arrayBuffer();
    if (!res.ok) throw new DeltaRefused(res.status, retryAfterMs(res.headers.get('retry-after')) ?? null);
  }

  /** Asks a person of the session to approve a tool call. */
  async requestApproval(sessionId: string, body: ToolApprovalRequest): Promise<ToolApproval> {
    return (await this.post<ToolApprovalAnswer>(`/api/v0/agent/sessions/${sessionId}/tool-approvals`, body)).toolApproval;
  }

  /** The approval once decided, or still pending after `waitMs`; `signal` ends the wait. */
  async awaitApproval(sessionId: string, approvalId: string, turnId: string, waitMs: number, signal?: AbortSignal): Promise<ToolApproval> {
    const query: ToolApprovalQuery = { turnId, waitMs: String(waitMs) };
    const path = `/api/v0/agent/sessions/${sessionId}/tool-approvals/${approvalId}?${searchParams(query)}`;
    return (await this.request<ToolApprovalAnswer>('GET', path, undefined, undefined, signal)).toolApproval;
  }

  /** What the agent found of one of the organization's marketplaces, for the plugin catalog the console shows. */
  async reportPluginCatalog(report: PluginCatalogReport): Promise<void> {
    await this.post<null>('/api/v0/agent/plugin-catalogs', report);
  }

  endTurn(sessionId: string, turnId: string, assistantActiveTimeMs: number): Promise<EndTurnAnswer> {
    const body: EndTurnRequest = { turnId, assistantActiveTimeMs: Math.round(assistantActiveTimeMs) };
    return this.post<EndTurnAnswer>(`/api/v0/agent/sessions/${sessionId}/end-turn`, body);
  }

  private post<Answer>(path: string, body: unknown): Promise<Answer> {
    return this.request<Answer>('POST', path, body, randomUUID());
  }

  /**
   * The answer's JSON, as the contract types it for the operation called: the agent trusts the server it was given
   * (its answers are not validated again here), as it trusts it with the work.
   */
  private async request<Answer>(
    method: string,
    path: string,
    body?: unknown,
    idempotencyKey?: string,
    signal?: AbortSignal,
    retryWindowMs = this.retryWindowMs,
  ): Promise<Answer> {
    return retryingRequest<Answer>({
      method,
      url: `${this.options.baseUrl}${path}`,
      path,
      headers: {
        authorization: `Bearer ${this.options.token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      signal,
      retryWindowMs,
      log: this.options.log,
    });
  }
}

/** A delta the server did not take; `retryAfterMs` when it said when to try again (429). */
export class DeltaRefused extends Error {
  constructor(
    readonly status: number,
    readonly retryAfterMs: number | null,
  ) {
    super(`the server answered ${status}`);
  }
}

/** A query string of the parameters that are set. */
function searchParams(query: Record<string, string | undefined>): URLSearchParams {
  return new URLSearchParams(Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

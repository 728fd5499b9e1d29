import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  AgentMessage,
  AgentPolicy,
  AppendAnswer,
  AppendRequest,
  ChannelError,
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
  ToolApproval,
  ToolApprovalAnswer,
  ToolApprovalQuery,
  ToolApprovalRequest,
  UsageAnswer,
  UsageReport,
  Work,
} from '../contract/agent-channel';

/** An answer the server gave on purpose (4xx): retrying would not change it. */
export class ChannelRefusal extends Error {
  /** The body as it came: the channel's error body, unless something between the two (a proxy) answered instead. */
  constructor(
    readonly status: number,
    readonly body: Partial<ChannelError>,
  ) {
    super(`${status}: ${body.detail ?? 'refused'}`);
  }

  get code(): string | undefined {
    return this.body.metadata?.code;
  }
}

export interface ClientOptions {
  baseUrl: string;
  token: string;
  /** Attempts per request on network errors, 5xx and 429 (each retry with the same Idempotency-Key). */
  attempts?: number;
  log?: (line: string) => void;
}

/**
 * The agent channel over HTTP. Every write carries an Idempotency-Key kept across its retries, so a
 * request whose answer was lost (network error, server restart) is retried without being done twice.
 */
export class PlatformClient {
  private readonly attempts: number;

  constructor(private readonly options: ClientOptions) {
    this.attempts = options.attempts ?? 10;
  }

  connect(hostname: string): Promise<ConnectAnswer> {
    return this.post<ConnectAnswer>('/api/v0/agent/connect', { hostname } satisfies ConnectRequest);
  }

  policy(): Promise<AgentPolicy> {
    return this.request<AgentPolicy>('GET', '/api/v0/agent/policy');
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
    return this.request<Heartbeat>('POST', `/api/v0/agent/sessions/${sessionId}/heartbeat`, { turnId } satisfies HeartbeatRequest);
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
  private async request<Answer>(method: string, path: string, body?: unknown, idempotencyKey?: string, signal?: AbortSignal): Promise<Answer> {
    let lastError: unknown;
    for (let attempt = 1; attempt <= this.attempts; attempt++) {
      signal?.throwIfAborted();
      try {
        const res = await fetch(`${this.options.baseUrl}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${this.options.token}`,
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
          },
          body: body !== undefined ? JSON.stringify(body) : undefined,
          signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(60_000)]) : AbortSignal.timeout(60_000),
        });
        const text = await res.text();
        const parsed = text ? (JSON.parse(text) as unknown) : null;
        if (res.ok) return parsed as Answer;
        if (res.status < 500 && res.status !== 429) throw new ChannelRefusal(res.status, (parsed ?? {}) as ChannelRefusal['body']);
        lastError = new Error(`${method} ${path}: ${res.status}`);
      } catch (error) {
        if (error instanceof ChannelRefusal || signal?.aborted) throw error;
        lastError = error;
      }
      // Bounded exponential backoff: 0.25 s, 0.5 s, 1 s ... up to 5 s between attempts.
      const delay = Math.min(5_000, 250 * 2 ** (attempt - 1));
      this.options.log?.(`${method} ${path} failed (${describe(lastError)}); attempt ${attempt} of ${this.attempts}, retrying in ${delay} ms`);
      await sleep(delay);
    }
    throw lastError instanceof Error ? lastError : new Error(String(lastError));
  }
}

/** A query string of the parameters that are set. */
function searchParams(query: Record<string, string | undefined>): URLSearchParams {
  return new URLSearchParams(Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

function describe(error: unknown): string {
  if (error instanceof Error) return (error.cause as Error | undefined)?.message ?? error.message;
  return String(error);
}

import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxSettings } from './sandbox/sandbox';

/** A message as the agent channel hands it out and takes it. */
export interface ChannelMessage {
  id?: string;
  role: 'user' | 'assistant' | 'tool' | 'system';
  content: Array<{ type: string; [field: string]: unknown }>;
  [attribute: string]: unknown;
}

export interface Work {
  turnId: string;
  sessionId: string;
  leaseExpiresAt: number;
  session: { sessionId: string; title?: string | null; sessionSettings?: Record<string, unknown> };
  messages: ChannelMessage[];
  /** Set when the turn's user messages did not all fit in the claim: the conversation goes on from it. */
  messagesCursor?: string | null;
}

export interface AgentPolicy {
  revision: number;
  commandAllowlist: string[];
  commandDenylist: string[];
  commandBlocklist: string[];
  modelPolicy: { allowedModelIds: string[]; blockedModelIds: string[] };
  sandbox?: SandboxSettings;
  networkPolicy?: { allowedIps: string[] };
  [field: string]: unknown;
}

/** A tool call waiting for, or having had, a person's decision. */
export interface ToolApproval {
  approvalId: string;
  status: 'pending' | 'allowed' | 'denied' | 'expired' | 'cancelled';
  expiresAt: number;
  message?: string;
}

/** An answer the server gave on purpose (4xx): retrying would not change it. */
export class ChannelRefusal extends Error {
  constructor(
    readonly status: number,
    readonly body: { detail?: string; metadata?: { code?: string } },
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

  connect(hostname: string): Promise<unknown> {
    return this.post('/api/v0/agent/connect', { hostname });
  }

  policy(): Promise<AgentPolicy> {
    return this.request('GET', '/api/v0/agent/policy') as Promise<AgentPolicy>;
  }

  /** Waits up to `waitMs` for work; `signal` ends the wait (a claim the server granted meanwhile is taken back when its lease runs out). */
  async claim(waitMs: number, signal?: AbortSignal): Promise<Work | null> {
    const { work } = (await this.request('POST', '/api/v0/agent/claims', { waitMs }, randomUUID(), signal)) as { work: Work | null };
    // The rest of a turn too large for one answer: the user messages after the cursor, page by page.
    for (let cursor = work?.messagesCursor; work && cursor;) {
      const page = await this.conversation(work.sessionId, work.turnId, cursor);
      work.messages.push(...page.messages.filter((message) => message.role === 'user'));
      cursor = page.nextCursor;
    }
    return work;
  }

  /** One page of the session's messages, oldest first, for the holder of its running turn. */
  async conversation(sessionId: string, turnId: string, cursor?: string): Promise<{ messages: ChannelMessage[]; nextCursor: string | null }> {
    const query = new URLSearchParams({ turnId, limit: '100', ...(cursor ? { cursor } : {}) });
    const page = (await this.request('GET', `/api/v0/agent/sessions/${sessionId}/messages?${query}`)) as {
      messages: ChannelMessage[];
      pagination: { nextCursor?: string | null };
    };
    return { messages: page.messages, nextCursor: page.pagination.nextCursor ?? null };
  }

  append(sessionId: string, turnId: string, messages: ChannelMessage[]): Promise<unknown> {
    return this.post(`/api/v0/agent/sessions/${sessionId}/messages`, { turnId, messages });
  }

  usage(
    sessionId: string,
    body: { turnId: string; model: string; inputTokens: number; outputTokens: number; cacheReadTokens: number; thinkingTokens: number },
  ): Promise<unknown> {
    return this.post(`/api/v0/agent/sessions/${sessionId}/usage`, body);
  }

  /** Renews the turn's lease; `interrupted` says a user interrupted the turn. */
  heartbeat(sessionId: string, turnId: string): Promise<{ leaseExpiresAt: number; interrupted?: boolean }> {
    // No Idempotency-Key: a heartbeat done twice does no harm, and one a second would fill the server's key store.
    return this.request('POST', `/api/v0/agent/sessions/${sessionId}/heartbeat`, { turnId }) as Promise<{ leaseExpiresAt: number; interrupted?: boolean }>;
  }

  /** Asks a person of the session to approve a tool call. */
  async requestApproval(
    sessionId: string,
    body: { turnId: string; toolName: string; toolCallId?: string; summary: string; input: Record<string, unknown> },
  ): Promise<ToolApproval> {
    return ((await this.post(`/api/v0/agent/sessions/${sessionId}/tool-approvals`, body)) as { toolApproval: ToolApproval }).toolApproval;
  }

  /** The approval once decided, or still pending after `waitMs`; `signal` ends the wait. */
  async awaitApproval(sessionId: string, approvalId: string, turnId: string, waitMs: number, signal?: AbortSignal): Promise<ToolApproval> {
    const query = new URLSearchParams({ turnId, waitMs: String(waitMs) });
    const answer = (await this.request('GET', `/api/v0/agent/sessions/${sessionId}/tool-approvals/${approvalId}?${query}`, undefined, undefined, signal)) as {
      toolApproval: ToolApproval;
    };
    return answer.toolApproval;
  }

  endTurn(sessionId: string, turnId: string, assistantActiveTimeMs: number): Promise<unknown> {
    return this.post(`/api/v0/agent/sessions/${sessionId}/end-turn`, { turnId, assistantActiveTimeMs: Math.round(assistantActiveTimeMs) });
  }

  private post(path: string, body: unknown): Promise<unknown> {
    return this.request('POST', path, body, randomUUID());
  }

  private async request(method: string, path: string, body?: unknown, idempotencyKey?: string, signal?: AbortSignal): Promise<unknown> {
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
        if (res.ok) return parsed;
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

function describe(error: unknown): string {
  if (error instanceof Error) return (error.cause as Error | undefined)?.message ?? error.message;
  return String(error);
}

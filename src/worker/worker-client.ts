import type { AgentPolicy } from '../contract/agent-channel';
import { retryingRequest } from '../contract/retrying-request';
import type {
  AgentTokenAnswer,
  ClaimAnswer,
  HeartbeatAnswer,
  HeartbeatRequest,
  Registration,
  RegisterRequest,
  StepFinishAnswer,
  StepFinishRequest,
  StepLogRequest,
} from '../contract/worker-channel';

export { ChannelRefusal } from '../contract/retrying-request';

/** How long a registration is tried again while the server is down or busy, before the worker's own, slower, retries. */
const RETRY_WINDOW_MS = 30_000;
const LEAVE_RETRY_WINDOW_MS = 5_000;
/** A step's log and finish, and an agent's token, are worth a short outage's wait: the claim outlives it. */
const STEP_RETRY_WINDOW_MS = 10_000;
/** A claim waits at most this long on the server: its own attempt's limit must be longer. */
const CLAIM_SLACK_MS = 15_000;

/**
 * The worker channel over HTTP, always from the worker's side. Registration carries the enrollment token, the other
 * calls the session token. A 4xx is a ChannelRefusal (401 `invalid_worker_token`: the credential is not, or no longer,
 * good), not retried. The channel takes no Idempotency-Key: a registration retried after its answer was lost makes a
 * second worker, and the first, never heard from, is `lost` a lease later.
 */
export class WorkerClient {
  constructor(
    private readonly baseUrl: string,
    private readonly log?: (line: string) => void,
  ) {}

  /** `signal` ends the attempts (the worker is stopping). */
  register(enrollmentToken: string, body: RegisterRequest, signal?: AbortSignal): Promise<Registration> {
    return this.post<Registration>('/api/v0/worker/register', enrollmentToken, body, RETRY_WINDOW_MS, signal);
  }

  /** Tried once: the worker decides how long a lease may go unrenewed, and tries again itself. */
  heartbeat(sessionToken: string, body: HeartbeatRequest, signal?: AbortSignal): Promise<HeartbeatAnswer> {
    return this.post<HeartbeatAnswer>('/api/v0/worker/heartbeat', sessionToken, body, 0, signal);
  }

  /** A long poll for a step to run; tried once (the step runner paces its own retries). */
  claim(sessionToken: string, waitMs: number, signal?: AbortSignal): Promise<ClaimAnswer> {
    const limit = AbortSignal.timeout(waitMs + CLAIM_SLACK_MS);
    return this.post<ClaimAnswer>('/api/v0/worker/claims', sessionToken, { waitMs }, 0, signal ? AbortSignal.any([signal, limit]) : limit);
  }

  async logStep(sessionToken: string, body: StepLogRequest, signal?: AbortSignal): Promise<void> {
    await this.post<null>('/api/v0/worker/steps/log', sessionToken, body, STEP_RETRY_WINDOW_MS, signal);
  }

  finishStep(sessionToken: string, body: StepFinishRequest, signal?: AbortSignal): Promise<StepFinishAnswer> {
    return this.post<StepFinishAnswer>('/api/v0/worker/steps/finish', sessionToken, body, STEP_RETRY_WINDOW_MS, signal);
  }

  /** The agent token of a computer placed on this worker (404 for any other): kept in memory only. */
  agentToken(sessionToken: string, computerId: string, signal?: AbortSignal): Promise<AgentTokenAnswer> {
    const path = `/api/v0/worker/computers/${encodeURIComponent(computerId)}/agent-token`;
    return this.request<AgentTokenAnswer>('GET', path, sessionToken, undefined, STEP_RETRY_WINDOW_MS, signal);
  }

  /** The organization's agent policy, read with one of its computers' agent tokens (the worker's session cannot). */
  agentPolicy(agentToken: string, signal?: AbortSignal): Promise<AgentPolicy> {
    return this.request<AgentPolicy>('GET', '/api/v0/agent/policy', agentToken, undefined, 0, signal);
  }

  /** Tried for a few seconds only: a worker shutting down does not wait long for an absent server (its lease lapses instead). */
  async leave(sessionToken: string): Promise<void> {
    await this.post<null>('/api/v0/worker/leave', sessionToken, undefined, LEAVE_RETRY_WINDOW_MS);
  }

  private post<Answer>(path: string, token: string, body: unknown, retryWindowMs: number, signal?: AbortSignal): Promise<Answer> {
    return this.request<Answer>('POST', path, token, body, retryWindowMs, signal);
  }

  private request<Answer>(method: string, path: string, token: string, body: unknown, retryWindowMs: number, signal?: AbortSignal): Promise<Answer> {
    return retryingRequest<Answer>({
      method,
      url: `${this.baseUrl}${path}`,
      path,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      signal,
      retryWindowMs,
      log: this.log,
    });
  }
}

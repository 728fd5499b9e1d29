import { retryingRequest } from '../contract/retrying-request';
import type { HeartbeatAnswer, Registration, RegisterRequest, WorkerUsage } from '../contract/worker-channel';

export { ChannelRefusal } from '../contract/retrying-request';

/** How long a registration is tried again while the server is down or busy, before the worker's own, slower, retries. */
const RETRY_WINDOW_MS = 30_000;
const LEAVE_RETRY_WINDOW_MS = 5_000;

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
  heartbeat(sessionToken: string, usage?: WorkerUsage, signal?: AbortSignal): Promise<HeartbeatAnswer> {
    return this.post<HeartbeatAnswer>('/api/v0/worker/heartbeat', sessionToken, usage ? { usage } : {}, 0, signal);
  }

  /** Tried for a few seconds only: a worker shutting down does not wait long for an absent server (its lease lapses instead). */
  async leave(sessionToken: string): Promise<void> {
    await this.post<null>('/api/v0/worker/leave', sessionToken, undefined, LEAVE_RETRY_WINDOW_MS);
  }

  private post<Answer>(path: string, token: string, body: unknown, retryWindowMs: number, signal?: AbortSignal): Promise<Answer> {
    return retryingRequest<Answer>({
      method: 'POST',
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

import { Injectable } from '@nestjs/common';
import { Principal } from '../auth';
import { IdempotencyService, IdempotentRequest, IdempotentResult } from '../../platform/idempotency';
import { AgentPresence } from './agent-presence';
import { LongPollSlots } from './long-poll-slots';
import { WorkQueue, WorkView } from './work-queue';
import { WorkSignal } from './work-signal';
import { WorkFilter } from '../sessions';

/**
 * The safety net for an arrival whose signal was lost (a NOTIFY its sender failed to send): a
 * waiting poll looks at the database again after this long even when nothing woke it. Arrivals
 * wake polls at once, lease expiries are timed, and a listener that reconnects wakes every poll,
 * so this is not how work is found. 30 s, the longest `waitMs`: a poll looks when it starts and
 * when woken, and its deadline answers without a last look, as the agent's next claim looks first
 * thing. So 1,000 agents polling for 30 s cost about 33 looks a second, and a lost signal delays
 * work by at most one poll's length.
 */
const SAFETY_RECHECK_MS = 30_000;
/** Least pause between two looks of one poll, so a lease expiring right now cannot spin it. */
const MIN_RECHECK_MS = 50;

class NoWork extends Error {}

/** The agent channel's claim: an agent takes waiting work, one agent per session at a time. */
@Injectable()
export class WorkClaims {
  constructor(
    private readonly queue: WorkQueue,
    private readonly idempotency: IdempotencyService,
    private readonly signal: WorkSignal,
    private readonly slots: LongPollSlots,
    private readonly presence: AgentPresence,
  ) {}

  /**
   * Takes waiting work; with `waitMs`, waits for some as a long poll: holding no database
   * connection, counted against the long-poll caps, woken by arrivals (WorkSignal), by the next
   * lease expiry of its queue, by the safety re-check, or by its client going away. With `abandoned`
   * (a client's connection), the claim also records that an agent is there (AgentPresence).
   */
  async claim(
    principal: Principal,
    input: { computerId?: string; waitMs?: number },
    idempotent?: IdempotentRequest,
    abandoned?: AbortSignal,
  ): Promise<IdempotentResult<{ work: WorkView | null }>> {
    const scope = await this.queue.scopeOf(principal, input.computerId);
    if (input.waitMs) this.slots.refuseIfFull(principal, scope);
    // A claim over a connection (the agent channel passes its signal) is an agent there to take this queue's work.
    if (abandoned) await this.presence.seen(principal.organizationId, scope);
    const nothing = { body: { work: null }, replayed: false };
    const deadline = Date.now() + (input.waitMs ?? 0);
    // Open before the first look, so an arrival during it is not missed.
    const poll = input.waitMs ? this.signal.open(principal.organizationId, scope) : undefined;
    let release: (() => void) | undefined;
    try {
      for (;;) {
        // An agent that went away while waiting (killed, disconnected) must not be handed work no one will do.
        if (abandoned?.aborted) return nothing;
        const seen = poll?.mark() ?? 0;
        const look = await this.look(principal, scope, idempotent, poll !== undefined);
        if (look.result) {
          poll?.tookWork();
          return look.result;
        }
        const now = Date.now();
        const left = deadline - now;
        if (!poll || left <= 0 || this.signal.closing) return nothing;
        release ??= this.slots.acquire(principal, scope.computerId, scope);
        const untilExpiry = look.nextLeaseExpiry ? Math.max(look.nextLeaseExpiry.getTime() + 1 - now, MIN_RECHECK_MS) : Infinity;
        const outcome = await poll.wait(Math.min(left, SAFETY_RECHECK_MS, untilExpiry), seen, abandoned);
        if (outcome === 'timeout' && Date.now() >= deadline) return nothing;
      }
    } finally {
      poll?.close();
      release?.();
    }
  }

  /** One attempt to take work, in a transaction of its own; without work, when the queue's next lease runs out if asked. */
  private async look(
    principal: Principal,
    scope: WorkFilter,
    idempotent: IdempotentRequest | undefined,
    withExpiry: boolean,
  ): Promise<{ result?: IdempotentResult<{ work: WorkView | null }>; nextLeaseExpiry?: Date | null }> {
    let nextLeaseExpiry: Date | null = null;
    try {
      const result = await this.idempotency.run(principal, idempotent, async (manager) => {
        const claimed = await this.queue.take(manager, principal, scope);
        if (!claimed) {
          if (withExpiry) nextLeaseExpiry = await this.queue.nextLeaseExpiry(manager, scope);
          throw new NoWork();
        }
        return { work: claimed.work };
      });
      return { result };
    } catch (error) {
      if (!(error instanceof NoWork)) throw error;
      return { nextLeaseExpiry };
    }
  }
}

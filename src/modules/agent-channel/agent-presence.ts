import { Injectable, Logger } from '@nestjs/common';
import { AgentPresenceRepository } from './agent-presence.repository';
import { SessionStatus, StatusReason } from '../sessions';

/**
 * How long after its last claim an agent still counts as there: longer than the longest long poll
 * (30 s) plus {@link WRITE_EVERY_MS}, so an agent that keeps polling never drops out between polls.
 */
export const AGENT_PRESENCE_WINDOW_MS = 90_000;
/** An instance records a queue's agent at most this often (claims without `waitMs` may come in a loop). */
const WRITE_EVERY_MS = 15_000;
/** A queue no agent asked in for this long (a deleted computer's, a gone member's) is forgotten. */
const FORGET_AFTER_MS = 7 * 86_400_000;
/**
 * How long an organization's live queues are reused: every added message and every page with a pending session asks,
 * and against a 90 s window a second is noise. A claim on this instance in a queue the cached answer lacks drops it.
 */
const CACHE_MS = 1_000;

/** One queue agents take work from: a computer's (or the unrouted one, null), for anyone's sessions or one member's. */
export interface AgentQueue {
  computerId: string | null;
  ownerId?: string;
}

/**
 * Which queues of an organization an agent asked for work in lately: the agent channel records its
 * claims here, and sessions waiting in a queue nobody asked in say so (`statusReason`, add-message
 * `warnings`). In the database, so every instance sees the agents polling any other.
 */
@Injectable()
export class AgentPresence {
  private readonly logger = new Logger(AgentPresence.name);
  /** When this instance last wrote each queue, by `organization|queue`. */
  private readonly written = new Map<string, number>();
  /** The live queues last read for each organization, and when. */
  private readonly cached = new Map<string, { at: number; queues: AgentQueue[] }>();

  constructor(private readonly presence: AgentPresenceRepository) {}

  /** An agent asked for work in `queue` now. Never fails the claim: a lost write only delays the next one. */
  async seen(organizationId: string, queue: AgentQueue, now = Date.now()): Promise<void> {
    const key = queueKey(queue);
    const cached = this.cached.get(organizationId);
    if (cached && !cached.queues.some((q) => queueKey(q) === key)) this.cached.delete(organizationId);
    const mapKey = `${organizationId}|${key}`;
    if (now - (this.written.get(mapKey) ?? -Infinity) < WRITE_EVERY_MS) return;
    this.written.set(mapKey, now);
    if (this.written.size > 10_000) {
      for (const [k, at] of this.written) if (now - at >= WRITE_EVERY_MS) this.written.delete(k);
    }
    try {
      await this.presence.recordAgentClaim(
        organizationId,
        { key, computerId: queue.computerId, ownerId: queue.ownerId ?? null },
        new Date(now),
        FORGET_AFTER_MS,
      );
    } catch (error) {
      this.written.delete(mapKey);
      this.logger.warn(`Could not record an agent's claim: ${(error as Error).message}`);
    }
  }

  /** The organization's queues an agent asked in within the window. */
  async liveQueues(organizationId: string, now = Date.now()): Promise<AgentQueue[]> {
    const cached = this.cached.get(organizationId);
    if (cached && now >= cached.at && now - cached.at < CACHE_MS) return cached.queues;
    const rows = await this.presence.agentQueuesSeenSince(organizationId, new Date(now - AGENT_PRESENCE_WINDOW_MS));
    const queues = rows.map((queue) => ({ computerId: queue.computerId, ...(queue.ownerId ? { ownerId: queue.ownerId } : {}) }));
    if (this.cached.size >= 10_000) this.cached.clear();
    this.cached.set(organizationId, { at: now, queues });
    return queues;
  }

  /** Why no agent will take the session: only for a `pending` one whose queue no agent asked in lately; else null. */
  static reason(live: AgentQueue[], session: { status: SessionStatus; workComputerId: string | null; ownerId: string }): StatusReason | null {
    if (session.status !== SessionStatus.Pending) return null;
    const taken = live.some((q) => q.computerId === session.workComputerId && (q.ownerId === undefined || q.ownerId === session.ownerId));
    if (taken) return null;
    const seconds = AGENT_PRESENCE_WINDOW_MS / 1000;
    return session.workComputerId
      ? {
          code: 'no_agent_for_computer',
          message:
            `No agent of computer ${session.workComputerId} asked for work in the last ${seconds} s: the session waits until the computer's agent ` +
            "connects (start it with the computer's agent token), or send the message to another computer with `computerId`.",
        }
      : {
          code: 'no_agent_for_organization',
          message:
            `The session has no computer and no agent of your organization asked for unrouted work in the last ${seconds} s: it waits until one does. ` +
            "Create the session with a `computerId`, or send the message with one, to have that computer's agent take it.",
        };
  }
}

function queueKey(queue: AgentQueue): string {
  return `${queue.computerId ?? ''}|${queue.ownerId ?? ''}`;
}

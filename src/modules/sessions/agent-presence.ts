import { Injectable, Logger } from '@nestjs/common';
import { Sql } from '../../platform/database/sql';
import { SessionStatus } from './domain/session-status';
import { StatusReason } from './domain/views';

/**
 * How long after its last claim an agent still counts as there: longer than the longest long poll
 * (30 s) plus {@link WRITE_EVERY_MS}, so an agent that keeps polling never drops out between polls.
 */
export const AGENT_PRESENCE_WINDOW_MS = 90_000;
/** An instance records a queue's agent at most this often (claims without `waitMs` may come in a loop). */
const WRITE_EVERY_MS = 15_000;

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

  constructor(private readonly sql: Sql) {}

  /** An agent asked for work in `queue` now. Never fails the claim: a lost write only delays the next one. */
  async seen(organizationId: string, queue: AgentQueue, now = Date.now()): Promise<void> {
    const key = queueKey(queue);
    const mapKey = `${organizationId}|${key}`;
    if (now - (this.written.get(mapKey) ?? -Infinity) < WRITE_EVERY_MS) return;
    this.written.set(mapKey, now);
    if (this.written.size > 10_000) {
      for (const [k, at] of this.written) if (now - at >= WRITE_EVERY_MS) this.written.delete(k);
    }
    try {
      await this.sql.query(
        'agentPresence.seen',
        `INSERT INTO agent_presence (organization_id, queue, computer_id, owner_id, seen_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (organization_id, queue) DO UPDATE SET seen_at = GREATEST(agent_presence.seen_at, EXCLUDED.seen_at)`,
        [organizationId, key, queue.computerId, queue.ownerId ?? null, new Date(now)],
      );
    } catch (error) {
      this.written.delete(mapKey);
      this.logger.warn(`Could not record an agent's claim: ${(error as Error).message}`);
    }
  }

  /** The organization's queues an agent asked in within the window. */
  async liveQueues(organizationId: string, now = Date.now()): Promise<AgentQueue[]> {
    const rows = await this.sql.query<{ computer_id: string | null; owner_id: string | null }>(
      'agentPresence.live',
      `SELECT computer_id, owner_id FROM agent_presence WHERE organization_id = $1 AND seen_at > $2`,
      [organizationId, new Date(now - AGENT_PRESENCE_WINDOW_MS)],
    );
    return rows.map((row) => ({ computerId: row.computer_id, ...(row.owner_id ? { ownerId: row.owner_id } : {}) }));
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
            'connects (start it with the computer\'s agent token), or send the message to another computer with `computerId`.',
        }
      : {
          code: 'no_agent_for_organization',
          message:
            `The session has no computer and no agent of your organization asked for unrouted work in the last ${seconds} s: it waits until one does. ` +
            'Create the session with a `computerId`, or send the message with one, to have that computer\'s agent take it.',
        };
  }
}

function queueKey(queue: AgentQueue): string {
  return `${queue.computerId ?? ''}|${queue.ownerId ?? ''}`;
}

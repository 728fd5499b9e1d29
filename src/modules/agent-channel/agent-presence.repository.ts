import { Injectable } from '@nestjs/common';
import { Sql } from '../../platform/database/sql';

/** The SQL of agent presence: which queues agents asked in, and when (agent_presence). */
@Injectable()
export class AgentPresenceRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * An agent asked for work in a queue at `at` (see AgentPresence). The organization's queues no
   * agent asked in for `forgetAfterMs` (a deleted computer's, a gone member's) are dropped at the same time.
   */
  async recordAgentClaim(
    organizationId: string,
    queue: { key: string; computerId: string | null; ownerId: string | null },
    at: Date,
    forgetAfterMs: number,
  ): Promise<void> {
    await this.sql.query(
      'agentPresence.seen',
      `WITH forgotten AS (DELETE FROM agent_presence WHERE organization_id = $1 AND queue <> $2 AND seen_at < $6)
       INSERT INTO agent_presence (organization_id, queue, computer_id, owner_id, seen_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (organization_id, queue) DO UPDATE SET seen_at = GREATEST(agent_presence.seen_at, EXCLUDED.seen_at)`,
      [organizationId, queue.key, queue.computerId, queue.ownerId, at, new Date(at.getTime() - forgetAfterMs)],
    );
  }

  /** The organization's queues an agent asked in since `since`. */
  async agentQueuesSeenSince(organizationId: string, since: Date): Promise<Array<{ computerId: string | null; ownerId: string | null }>> {
    const rows = await this.sql.query<{ computer_id: string | null; owner_id: string | null }>(
      'agentPresence.live',
      `SELECT computer_id, owner_id FROM agent_presence WHERE organization_id = $1 AND seen_at > $2`,
      [organizationId, since],
    );
    return rows.map((row) => ({ computerId: row.computer_id, ownerId: row.owner_id }));
  }
}

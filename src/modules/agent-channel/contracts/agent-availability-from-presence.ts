import { Injectable } from '@nestjs/common';
import { AgentAvailability, StatusReason, WaitingSession } from '../../sessions';
import { AgentPresence } from '../agent-presence';

/** Sessions' AgentAvailability, kept from the queues agents asked in lately (AgentPresence). */
@Injectable()
export class AgentAvailabilityFromPresence extends AgentAvailability {
  constructor(private readonly presence: AgentPresence) {
    super();
  }

  async reasonsNow(organizationId: string): Promise<(session: WaitingSession) => StatusReason | null> {
    const live = await this.presence.liveQueues(organizationId);
    return (session) => AgentPresence.reason(live, session);
  }
}

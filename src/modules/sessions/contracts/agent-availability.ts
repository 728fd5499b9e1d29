import type { SessionStatus } from '../domain/session-status';
import type { StatusReason } from '../domain/views';

/** What decides whether an agent will take a session's waiting work: its status, where the work is routed, whose it is. */
export type WaitingSession = { status: SessionStatus; workComputerId: string | null; ownerId: string };

/**
 * Where Sessions learns whether any agent is there to take a pending session's work, for the session's `statusReason`
 * and add-message `warnings`: a contract the agent channel fulfils from the claims agents make (it imports Sessions).
 */
export abstract class AgentAvailability {
  /** Asked once per request: the answer tells, for each session, why no agent will take it (null: one will, or it is not pending). */
  abstract reasonsNow(organizationId: string): Promise<(session: WaitingSession) => StatusReason | null>;
}

import { Injectable } from '@nestjs/common';
import { Principal } from '../auth';
import { LiveEvents, MessageDeltaKind } from '../../platform/events';
import { isUuid } from '../../platform/database/ids';
import { mayWorkOn } from './agent-work.service';
import { DeltaRate } from './delta-rate';
import { SessionsError, SessionsErrorCode, SessionStatus, SessionTurns, turnNotActive } from '../sessions';

/**
 * The live work of a turn (`message.delta`): what the agent's model is writing (its answer, thinking and tool calls'
 * arguments) and its tools' output, to the session's open streams, never stored.
 */
@Injectable()
export class TurnDeltas {
  constructor(
    private readonly sessionTurns: SessionTurns,
    private readonly live: LiveEvents,
    private readonly rate: DeltaRate,
  ) {}

  /**
   * A piece of what the model is writing or a tool is printing, to the session's live streams (`message.delta`): the
   * turn must be the running one, as for appends, but nothing is written, so the session is read,
   * not locked, and the lease is not renewed (heartbeats do that).
   */
  async publish(
    principal: Principal,
    sessionId: string,
    input: { turnId: string; step: number; kind?: MessageDeltaKind; toolUseId?: string; toolName?: string; text: string },
  ): Promise<void> {
    this.rate.take(principal);
    const session = isUuid(sessionId) ? await this.sessionTurns.find(sessionId, principal.organizationId) : null;
    if (!session || !mayWorkOn(principal, session)) {
      throw new SessionsError(SessionsErrorCode.SessionNotFound, `No session ${sessionId} exists in your organization.`);
    }
    if (session.status !== SessionStatus.Running || !isUuid(input.turnId) || session.turnId !== input.turnId.toLowerCase()) {
      throw turnNotActive(sessionId, input.turnId, session.status);
    }
    await this.live.publish({
      organizationId: principal.organizationId,
      sessionId: session.id,
      turnId: session.turnId,
      step: input.step,
      kind: input.kind ?? 'text',
      // The schema has a call's id and name come together, and only with the tool kinds.
      ...(input.toolUseId !== undefined ? { toolUseId: input.toolUseId, toolName: input.toolName } : {}),
      text: input.text,
      occurredAt: Date.now(),
    });
  }
}

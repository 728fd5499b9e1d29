import type { ApiSchema } from '../../platform/http/api-schema';
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { eventActorOf, Principal, Role } from '../auth';
import { EventLog } from '../../platform/events';
import { isUuid, newId } from '../../platform/database/ids';
import { ToolApprovalLedger } from './tool-approval-ledger';
import {
  assertTransition,
  ComputerVisibility,
  SessionsError,
  SessionsErrorCode,
  SessionStatus,
  SessionTrigger,
  SessionTurns,
  toMessageView,
  toSessionView,
  WorkFilter,
} from '../sessions';

/** A turn to work on, as `POST /api/v0/agent/claims` answers it (ClaimWorkResponse). */
export type WorkView = NonNullable<ApiSchema<'ClaimWorkResponse'>['work']>;

/**
 * The waiting work of a queue (a computer's, or the unrouted work): which queue a caller takes
 * from, and taking its next session, which starts a turn under a lease.
 */
@Injectable()
export class WorkQueue {
  constructor(
    private readonly sessionTurns: SessionTurns,
    private readonly computers: ComputerVisibility,
    private readonly ledger: ToolApprovalLedger,
    private readonly events: EventLog,
    private readonly config: AppConfig,
  ) {}

  /** The queue the caller takes from. */
  /** The queue a claim takes from; 403 when the organization's controls keep its computer from new work. */
  async scopeOf(principal: Principal, computerId: string | undefined): Promise<WorkFilter> {
    const scope = { organizationId: principal.organizationId, computerId: await this.claimScope(principal, computerId), ownerId: ownerScopeOf(principal) };
    const refusal = scope.computerId ? await this.computers.workRefusal(principal.organizationId, scope.computerId) : null;
    if (refusal) throw new SessionsError(SessionsErrorCode.ComputerWorkDisabled, refusal.detail, { control: refusal.control, computerId: scope.computerId });
    return scope;
  }

  /** When the queue's next running turn's lease runs out (its work is then to be taken again), or null. */
  nextLeaseExpiry(manager: EntityManager, scope: WorkFilter): Promise<Date | null> {
    return this.sessionTurns.nextLeaseExpiry(manager, scope);
  }

  async take(manager: EntityManager, principal: Principal, scope: WorkFilter): Promise<{ work: WorkView } | null> {
    const now = new Date();
    const computerId = scope.computerId;
    const session = await this.sessionTurns.lockNextWork(manager, scope, now);
    if (!session) return null;
    // A turn whose lease ran out is restarted with the same work; fresh work starts where the last turn stopped.
    const reclaimed = session.status === SessionStatus.Running;
    const turnBaseSeq = reclaimed ? session.turnBaseSeq : session.claimedSeq;
    const leaseExpiresAt = this.leaseFrom(now);
    // The silent agent's questions go unanswered: the new turn asks again if it needs to.
    if (reclaimed) await this.ledger.cancelPending(manager, session, { kind: 'system' });
    const started = await this.sessionTurns.startTurn(manager, session, { turnId: newId(), turnBaseSeq, leaseExpiresAt, now, computerId });
    assertTransition(reclaimed ? SessionTrigger.AgentLeaseExpired : SessionTrigger.AgentTookWork, session.status, started.status);
    if (!reclaimed) {
      this.events.raise(manager, {
        type: 'session.status_changed',
        organizationId: principal.organizationId,
        sessionId: session.id,
        actor: eventActorOf(principal),
        data: { sessionId: session.id, from: session.status, to: SessionStatus.Running },
      });
    }
    const { messages, nextCursor } = await this.sessionTurns.userMessagesAfter(manager, session, turnBaseSeq, this.config.MESSAGE_PAGE_MAX_BYTES);
    return {
      work: {
        turnId: started.turnId!,
        sessionId: started.id,
        leaseExpiresAt: leaseExpiresAt.getTime(),
        session: toSessionView(started),
        messages: messages.map(toMessageView),
        messagesCursor: nextCursor,
      },
    };
  }

  /**
   * The queue a claim takes from: a computer's token takes its computer's work (naming another
   * computer is 404); an API key or JWT takes the named computer's, which it must see, or the
   * unrouted work.
   */
  private async claimScope(principal: Principal, computerId: string | undefined): Promise<string | null> {
    const own = principal.credential.kind === 'computer' ? principal.credential.computerId : undefined;
    const visible =
      computerId === undefined ||
      (own !== undefined ? computerId.toLowerCase() === own : isUuid(computerId) && (await this.computers.visibleTo(principal, computerId)));
    if (!visible) {
      throw new SessionsError(SessionsErrorCode.ComputerNotFound, `No computer ${computerId} exists in your organization.`, { field: 'computerId' });
    }
    return own ?? computerId?.toLowerCase() ?? null;
  }

  private leaseFrom(now: Date): Date {
    return new Date(now.getTime() + this.config.AGENT_LEASE_MS);
  }
}

/** A member's key takes only their own sessions' work; a computer's token takes all work routed to it. */
function ownerScopeOf(principal: Principal): string | undefined {
  return principal.role === Role.Member && principal.credential.kind !== 'computer' ? principal.userId : undefined;
}

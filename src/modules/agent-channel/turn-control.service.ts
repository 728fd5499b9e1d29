import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { eventActorOf, Principal } from '../auth';
import { EventActor, EventLog } from '../../platform/events';
import { isUuid } from '../../platform/database/ids';
import { IdempotencyService, IdempotentRequest, IdempotentResult } from '../../platform/idempotency';
import { ToolApprovalsRepository } from './tool-approvals.repository';
import { ToolApprovalLedger } from './tool-approval-ledger';
import {
  assertTransition,
  SessionAccess,
  sessionNotFound,
  SessionsError,
  SessionsErrorCode,
  SessionStatus,
  SessionTrigger,
  SessionTurns,
  SessionView,
  ToolApprovalDecision,
  toolApprovalNotFound,
  ToolApprovalStatus,
  toSessionView,
} from '../sessions';
import { ToolApprovalView, toToolApprovalView } from './tool-approval-view';
import { DataSource } from 'typeorm';

/** Pending approvals a list shows (a turn asks one at a time, so a session rarely has more than one). */
const PENDING_LIST_LIMIT = 100;
/** Rows one sweep transaction handles. */
const SWEEP_BATCH = 100;
const SYSTEM: EventActor = { kind: 'system' };

/**
 * A person in the loop of a turn: a user of the session interrupts the running turn, or allows or
 * denies a tool call its agent asked about; the agent learns both from the channel (the heartbeat
 * answer, and a long poll on the approval: ToolApprovalWaits). The sweep ends what nobody ended in time.
 */
@Injectable()
export class TurnControlService {
  constructor(
    private readonly sessionTurns: SessionTurns,
    private readonly dataSource: DataSource,
    private readonly approvals: ToolApprovalsRepository,
    private readonly access: SessionAccess,
    private readonly ledger: ToolApprovalLedger,
    private readonly idempotency: IdempotencyService,
    private readonly events: EventLog,
    private readonly config: AppConfig,
  ) {}

  /**
   * Interrupts the running turn: marks it (who, when), cancels the approvals it waits for and raises
   * `turn.interrupted`. The agent sees it at its next heartbeat; its lease no longer renews, so a
   * silent agent's turn is ended by the sweep after AGENT_INTERRUPT_GRACE_MS. Interrupting a turn
   * already interrupted changes nothing and answers the same.
   */
  async interrupt(principal: Principal, sessionId: string, idempotent?: IdempotentRequest): Promise<IdempotentResult<SessionView>> {
    const session = this.access.writable(principal, await this.access.readable(principal, sessionId));
    const actor = eventActorOf(principal);
    return this.idempotency.run(principal, idempotent, async (manager) => {
      const locked = await this.sessionTurns.find(session.id, principal.organizationId, manager, true);
      if (!locked) throw sessionNotFound(sessionId);
      if (locked.status !== SessionStatus.Running || !locked.turnId) {
        throw new SessionsError(SessionsErrorCode.NoRunningTurn, `Session ${sessionId} has no running turn to interrupt: it is ${locked.status}.`, {
          sessionStatus: locked.status,
        });
      }
      if (locked.turnInterruptedAt) return toSessionView(locked);
      const now = new Date();
      const interrupted = await this.sessionTurns.interruptTurn(manager, locked, {
        actor,
        now,
        lapsesAt: new Date(now.getTime() + this.config.AGENT_INTERRUPT_GRACE_MS),
      });
      await this.ledger.cancelPending(manager, locked, actor);
      this.events.raise(manager, {
        type: 'turn.interrupted',
        organizationId: principal.organizationId,
        sessionId: locked.id,
        actor,
        data: { sessionId: locked.id, turnId: locked.turnId },
      });
      return toSessionView({ ...interrupted, pendingToolApprovals: 0 });
    });
  }

  /** The session's tool calls waiting for a decision, oldest first, for anyone who may read the session. */
  async pending(principal: Principal, sessionId: string): Promise<ToolApprovalView[]> {
    const session = await this.access.readable(principal, sessionId);
    const now = Date.now();
    // One past its timeout is denied already, whether or not the sweep has written it down yet.
    return (await this.approvals.pendingToolApprovals(session, PENDING_LIST_LIMIT)).filter((a) => a.expiresAt.getTime() > now).map(toToolApprovalView);
  }

  /** A user of the session allows or denies a pending call: 409 when it has its answer already (or timed out). */
  async decide(
    principal: Principal,
    sessionId: string,
    approvalId: string,
    input: { decision: ToolApprovalDecision; message?: string },
    idempotent?: IdempotentRequest,
  ): Promise<IdempotentResult<{ toolApproval: ToolApprovalView }>> {
    const session = this.access.writable(principal, await this.access.readable(principal, sessionId));
    const actor = eventActorOf(principal);
    return this.idempotency.run(principal, idempotent, async (manager) => {
      await this.sessionTurns.find(session.id, principal.organizationId, manager, true);
      const approval = isUuid(approvalId)
        ? await this.approvals.findToolApproval(session.id, principal.organizationId, approvalId.toLowerCase(), manager, true)
        : null;
      if (!approval) throw toolApprovalNotFound(sessionId, approvalId);
      const status =
        approval.status === ToolApprovalStatus.Pending && approval.expiresAt.getTime() <= Date.now() ? ToolApprovalStatus.Expired : approval.status;
      if (status !== ToolApprovalStatus.Pending) {
        throw new SessionsError(SessionsErrorCode.ToolApprovalNotPending, `Tool approval ${approvalId} is ${status}: it can no longer be decided.`, { status });
      }
      const outcome = input.decision === 'allow' ? ToolApprovalStatus.Allowed : ToolApprovalStatus.Denied;
      const resolved = await this.ledger.resolve(manager, approval, outcome, actor, input.message ?? null);
      return { toolApproval: toToolApprovalView(resolved) };
    });
  }

  /**
   * One sweep: ends interrupted turns whose agent let the grace pass (the session becomes `idle`),
   * and writes down approvals nobody answered in time as `expired`. Safe on many instances: rows
   * another instance holds are skipped.
   */
  async sweep(now = new Date()): Promise<{ turnsEnded: number; approvalsExpired: number; turnsSkipped: boolean }> {
    let turnsEnded = 0;
    let approvalsExpired = 0;
    for (let batch = SWEEP_BATCH; batch === SWEEP_BATCH;) {
      batch = await this.dataSource.transaction(async (manager) => {
        const lapsed = await this.sessionTurns.lockLapsedInterruptedTurns(manager, now, SWEEP_BATCH);
        for (const session of lapsed) {
          await this.ledger.cancelPending(manager, session, SYSTEM);
          const ended = await this.sessionTurns.endTurn(manager, session, { status: SessionStatus.Idle, now, activeTimeMs: 0 });
          assertTransition(SessionTrigger.InterruptedTurnLapsed, session.status, ended.status);
          this.events.raise(manager, {
            type: 'session.status_changed',
            organizationId: session.organizationId,
            sessionId: session.id,
            actor: SYSTEM,
            data: { sessionId: session.id, from: session.status, to: ended.status },
          });
        }
        return lapsed.length;
      });
      turnsEnded += batch;
    }
    // A lapsed turn whose row another transaction held (its agent's heartbeat, say) was skipped: the caller sweeps again.
    const turnsSkipped = await this.dataSource.transaction((manager) => this.sessionTurns.anyLapsedInterruptedTurn(manager, now));
    for (let batch = SWEEP_BATCH; batch === SWEEP_BATCH;) {
      const due = await this.approvals.dueToolApprovals(now, SWEEP_BATCH);
      let expiredNow = 0;
      for (const approval of due) {
        // The session's lock first, then the approval's: the order every other writer takes.
        const expired = await this.dataSource.transaction(async (manager) => {
          await this.sessionTurns.find(approval.sessionId, approval.organizationId, manager, true);
          const locked = await this.approvals.findToolApproval(approval.sessionId, approval.organizationId, approval.id, manager, true);
          if (!locked || locked.status !== ToolApprovalStatus.Pending) return false;
          await this.ledger.resolve(manager, locked, ToolApprovalStatus.Expired, SYSTEM);
          return true;
        });
        if (expired) expiredNow++;
      }
      approvalsExpired += expiredNow;
      // A full batch of which none could be expired (another instance took them all) ends the sweep too.
      batch = expiredNow === SWEEP_BATCH ? SWEEP_BATCH : 0;
    }
    return { turnsEnded, approvalsExpired, turnsSkipped };
  }
}

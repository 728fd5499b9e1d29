import { Injectable } from '@nestjs/common';
import { Principal } from '../auth';
import { EventActor, OnDomainEvent, StoredEvent } from '../../platform/events';
import { isUuid } from '../../platform/database/ids';
import { mayWorkOn } from './agent-work.service';
import { ToolApprovalEntity } from './entities';
import { LongPollSlots } from './long-poll-slots';
import { ToolApprovalsRepository } from './tool-approvals.repository';
import { ToolApprovalLedger } from './tool-approval-ledger';
import { sessionNotFound, SessionsError, SessionsErrorCode, SessionStatus, SessionTurns, ToolApprovalStatus } from '../sessions';
import { ToolApprovalView, toToolApprovalView } from './tool-approval-view';
import { DataSource } from 'typeorm';

/** The longest an agent's wait for a decision may last in one request. */
export const MAX_APPROVAL_WAIT_MS = 30_000;
const SYSTEM: EventActor = { kind: 'system' };

/**
 * The agent waits for a person's decision on the tool call it asked about. Waits wake on the
 * `tool_approval.resolved` and `turn.interrupted` events, which every instance receives.
 */
@Injectable()
export class ToolApprovalWaits {
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly sessionTurns: SessionTurns,
    private readonly dataSource: DataSource,
    private readonly approvals: ToolApprovalsRepository,
    private readonly ledger: ToolApprovalLedger,
    private readonly slots: LongPollSlots,
  ) {}

  /**
   * The approval, for the agent that asked, once it has its answer, or as it is after `waitMs` (a
   * long poll, at most 30 s). Past its timeout it is answered `expired`. 409 `turn_not_active` when
   * the turn is over.
   */
  async await(
    principal: Principal,
    sessionId: string,
    approvalId: string,
    query: { turnId: string; waitMs: number },
    abandoned?: AbortSignal,
  ): Promise<{ toolApproval: ToolApprovalView }> {
    const deadline = Date.now() + Math.min(query.waitMs, MAX_APPROVAL_WAIT_MS);
    let release: (() => void) | undefined;
    try {
      for (;;) {
        const wake = this.open(sessionId.toLowerCase());
        try {
          const approval = await this.look(principal, sessionId, approvalId, query.turnId);
          const left = deadline - Date.now();
          if (approval.status !== ToolApprovalStatus.Pending || left <= 0 || abandoned?.aborted) return { toolApproval: toToolApprovalView(approval) };
          // A wait counts against the same caps as waiting claims.
          release ??= this.slots.acquire(principal, principal.credential.kind === 'computer' ? principal.credential.computerId : null);
          await wake.until(Math.min(left, approval.expiresAt.getTime() - Date.now() + 1), abandoned);
        } finally {
          wake.close();
        }
      }
    } finally {
      release?.();
    }
  }

  /** The approval as it stands, written `expired` when its time is up; the turn must still be the caller's. */
  private async look(principal: Principal, sessionId: string, approvalId: string, turnId: string): Promise<ToolApprovalEntity> {
    const session = isUuid(sessionId) ? await this.sessionTurns.find(sessionId, principal.organizationId) : null;
    if (!session || !mayWorkOn(principal, session)) throw sessionNotFound(sessionId);
    const found = isUuid(approvalId) ? await this.approvals.findToolApproval(session.id, principal.organizationId, approvalId.toLowerCase()) : null;
    if (!found || !isUuid(turnId) || found.turnId !== turnId.toLowerCase()) {
      throw new SessionsError(SessionsErrorCode.ToolApprovalNotFound, `No tool approval ${approvalId} of turn ${turnId} exists in session ${sessionId}.`);
    }
    if (found.status !== ToolApprovalStatus.Pending) return found;
    if (session.status !== SessionStatus.Running || session.turnId !== found.turnId) {
      throw new SessionsError(SessionsErrorCode.TurnNotActive, `Turn ${turnId} is not the running turn of session ${sessionId}.`, {
        sessionStatus: session.status,
      });
    }
    if (found.expiresAt.getTime() > Date.now()) return found;
    return this.dataSource.transaction(async (manager) => {
      await this.sessionTurns.find(session.id, principal.organizationId, manager, true);
      const locked = await this.approvals.findToolApproval(session.id, principal.organizationId, found.id, manager, true);
      if (!locked || locked.status !== ToolApprovalStatus.Pending) return locked ?? found;
      return this.ledger.resolve(manager, locked, ToolApprovalStatus.Expired, SYSTEM);
    });
  }

  @OnDomainEvent('tool_approval.resolved')
  onResolved(event: StoredEvent<'tool_approval.resolved'>): void {
    this.wake(event.data.sessionId);
  }

  @OnDomainEvent('turn.interrupted')
  onInterrupted(event: StoredEvent<'turn.interrupted'>): void {
    this.wake(event.data.sessionId);
  }

  private wake(sessionId: string): void {
    for (const waiter of this.waiters.get(sessionId) ?? []) waiter();
  }

  /** A wait on the session's approvals, opened before looking so that an answer during the look is not missed. */
  private open(sessionId: string): { until(ms: number, abandoned?: AbortSignal): Promise<void>; close(): void } {
    let woken = false;
    let release: (() => void) | null = null;
    const waiter = () => {
      woken = true;
      release?.();
    };
    const set = this.waiters.get(sessionId) ?? new Set();
    set.add(waiter);
    this.waiters.set(sessionId, set);
    return {
      until: (ms, abandoned) =>
        new Promise<void>((resolve) => {
          if (woken || abandoned?.aborted) return resolve();
          const timer = setTimeout(() => release?.(), Math.max(ms, 0));
          const onAbort = () => release?.();
          abandoned?.addEventListener('abort', onAbort, { once: true });
          release = () => {
            clearTimeout(timer);
            abandoned?.removeEventListener('abort', onAbort);
            release = null;
            resolve();
          };
        }),
      close: () => {
        set.delete(waiter);
        if (set.size === 0 && this.waiters.get(sessionId) === set) this.waiters.delete(sessionId);
      },
    };
  }
}

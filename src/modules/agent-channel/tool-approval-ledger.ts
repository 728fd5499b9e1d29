import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EventActor, EventLog } from '../../platform/events';
import { ToolApprovalEntity } from './entities';
import { ToolApprovalsRepository } from './tool-approvals.repository';
import { SessionKey, SessionTurns, ToolApprovalStatus } from '../sessions';

/**
 * Opens tool approvals and gives them their final status, with the `tool_approval.resolved` event in the same
 * transaction, keeping the session's count of pending ones (Sessions', through SessionTurns) in step. Callers hold the session's row lock first (then the approval's), so a decision, a
 * timeout and the end of the turn never deadlock one another.
 */
@Injectable()
export class ToolApprovalLedger {
  constructor(
    private readonly approvals: ToolApprovalsRepository,
    private readonly sessionTurns: SessionTurns,
    private readonly events: EventLog,
  ) {}

  /** Records a pending approval of the session's turn (the caller raises `tool_approval.requested`). */
  async open(manager: EntityManager, approval: ToolApprovalEntity): Promise<void> {
    await this.approvals.insertToolApproval(manager, approval);
    await this.sessionTurns.countPendingApprovals(manager, { organizationId: approval.organizationId, id: approval.sessionId }, 1);
  }

  async resolve(
    manager: EntityManager,
    approval: ToolApprovalEntity,
    status: Exclude<ToolApprovalStatus, ToolApprovalStatus.Pending>,
    by: EventActor | null,
    message: string | null = null,
  ): Promise<ToolApprovalEntity> {
    const resolved = await this.approvals.resolveToolApproval(manager, approval, { status, message, at: new Date(), by });
    await this.sessionTurns.countPendingApprovals(manager, { organizationId: approval.organizationId, id: approval.sessionId }, -1);
    this.events.raise(manager, {
      type: 'tool_approval.resolved',
      organizationId: approval.organizationId,
      sessionId: approval.sessionId,
      actor: by,
      data: {
        sessionId: approval.sessionId,
        approvalId: approval.id,
        turnId: approval.turnId,
        toolName: approval.toolName,
        status,
        allowed: status === ToolApprovalStatus.Allowed,
        message,
      },
    });
    return resolved;
  }

  /** Cancels what the session's turn still waits for (it ended, was interrupted or taken over); the session is locked. */
  async cancelPending(manager: EntityManager, session: SessionKey, by: EventActor | null): Promise<number> {
    const pending = await this.approvals.lockPendingToolApprovalsOfSession(manager, session);
    for (const approval of pending) await this.resolve(manager, approval, ToolApprovalStatus.Cancelled, by);
    return pending.length;
  }
}
